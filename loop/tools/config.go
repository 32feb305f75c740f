package tools

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/hookbus/hookbus/loop"
)

// Config configures the tools ByName builds.
type Config struct {
	// Root is the agent's root directory: the file tools are confined to
	// it, Bash runs in it. Required by every tool but clock and calculator.
	Root string
	// Bash configures Bash; its Root defaults to Root.
	Bash BashConfig
	// Now is the clock tool's time source (default time.Now).
	Now func() time.Time
}

// Names returns the names ByName knows: Claude Code's tools, then the demo
// tools.
func Names() []string {
	return []string{"Bash", "Read", "Write", "Edit", "Glob", "Grep", "clock", "calculator", "read_file"}
}

// ByName returns the built-in tool called name (one of Names), so that an
// agent definition can list its tools by name. An unknown name is an error
// wrapping ErrUnknownTool; a tool that needs Root without one, or a bad
// Bash configuration, an error wrapping ErrInvalidConfig.
func ByName(name string, cfg Config) (loop.Tool, error) {
	switch name {
	case "clock":
		return Clock(cfg.Now), nil
	case "calculator":
		return Calculator(), nil
	case "Bash":
		bc := cfg.Bash
		bc.Root = cmp.Or(bc.Root, cfg.Root)
		return NewBash(bc)
	case "read_file":
		if cfg.Root == "" {
			return nil, fmt.Errorf("%w: read_file needs a root directory", ErrInvalidConfig)
		}
		return ReadFile(cfg.Root), nil
	case "Read", "Write", "Edit", "Glob", "Grep":
		f, err := NewFS(cfg.Root)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return f.tool(name), nil
	}
	return nil, fmt.Errorf("%w: %q (known: %s)", ErrUnknownTool, name, strings.Join(Names(), ", "))
}

// ByNames returns the tools called names, in order. A name given twice is
// an error wrapping ErrInvalidConfig; see ByName for the others.
func ByNames(names []string, cfg Config) ([]loop.Tool, error) {
	seen := make(map[string]bool, len(names))
	ts := make([]loop.Tool, 0, len(names))
	for _, n := range names {
		if seen[n] {
			return nil, fmt.Errorf("%w: tool %q is listed twice", ErrInvalidConfig, n)
		}
		seen[n] = true
		t, err := ByName(n, cfg)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

func (f *FS) tool(name string) loop.Tool {
	switch name {
	case "Read":
		return f.Read()
	case "Write":
		return f.Write()
	case "Edit":
		return f.Edit()
	case "Glob":
		return f.Glob()
	default:
		return f.Grep()
	}
}
