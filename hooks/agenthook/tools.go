package agenthook

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/tools"
)

// DefaultTools are the tools of an agent hook when its config names none:
// Claude Code's read-only file tools.
var DefaultTools = []string{"Read", "Glob", "Grep"}

// ReadOnlyTools are the tools an agent hook may be given: they read files
// under the root (Read, Glob, Grep, read_file) or compute (clock,
// calculator), and change nothing.
var ReadOnlyTools = []string{"Read", "Glob", "Grep", "read_file", "clock", "calculator"}

// readOnly builds the named tools, refusing any that is not read-only. The
// error wraps ErrInvalidConfig, and ErrWriteTool for a tool that could
// change something.
func readOnly(names []string, root string) ([]loop.Tool, error) {
	for _, n := range names {
		if slices.Contains(ReadOnlyTools, n) {
			continue
		}
		why := "it is not one of the read-only tools (" + strings.Join(ReadOnlyTools, ", ") + ")"
		switch {
		case n == "Bash":
			why = "it runs shell commands"
		case n == "Write" || n == "Edit":
			why = "it writes files"
		case n == loop.TaskTool:
			why = "it calls agents that may have write tools"
		case strings.HasPrefix(n, "mcp__"):
			why = "MCP tools are never allowed (what they change is the server's business)"
		}
		return nil, fmt.Errorf("%w: %w: %q: %s", ErrInvalidConfig, ErrWriteTool, n, why)
	}
	ts, err := tools.ByNames(names, tools.Config{Root: root})
	if err != nil {
		return nil, fmt.Errorf("%w: tools: %w", ErrInvalidConfig, err)
	}
	return ts, nil
}
