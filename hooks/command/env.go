package command

import (
	"fmt"

	"github.com/hookbus/hookbus/internal/proc"
)

// hookEnv builds a hook's environment (internal/proc.Env, as hookbus' Bash
// tool gives its commands): the worker's base variables,
// CLAUDE_PROJECT_DIR, then the configured entries ("NAME" passes the
// worker's value, "NAME=value" sets one).
func hookEnv(root string, extra []string) ([]string, error) {
	env, err := proc.Env([]string{"CLAUDE_PROJECT_DIR=" + root}, extra)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return env, nil
}
