package agents

import (
	"encoding/json"
	"fmt"

	"github.com/hookbus/hookbus/hooks/claudecode"
	"go.yaml.in/yaml/v3"
)

// Hooks is an agent's hooks section: Claude Code's settings format (the
// hooks of a settings.json), written in YAML or JSON, registered on the
// agent's runs only.
//
//	hooks:
//	  PreToolUse:
//	    - matcher: Bash
//	      hooks:
//	        - {type: command, command: ./hooks/guard.sh, timeout: 30}
//
// Settings is nil when the agent has none.
type Hooks struct {
	Settings *claudecode.Settings
	raw      []byte // the section as JSON ({"hooks": ...}, keys sorted): part of the definition's digest
}

// UnmarshalYAML reads the section as claudecode.ParseSettings reads a
// settings file's hooks; errors name the section's line.
func (h *Hooks) UnmarshalYAML(n *yaml.Node) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return fmt.Errorf("line %d: hooks: %v", n.Line, err)
	}
	b, err := json.Marshal(map[string]any{"hooks": v})
	if err != nil {
		return fmt.Errorf("line %d: hooks: %v", n.Line, err)
	}
	s, err := claudecode.ParseSettings(b, fmt.Sprintf("hooks section at line %d", n.Line))
	if err != nil {
		return err
	}
	h.Settings, h.raw = s, b
	return nil
}
