package tools_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/tools"
)

func TestByName(t *testing.T) {
	root := t.TempDir()
	cfg := tools.Config{Root: root, Now: func() time.Time { return base }}
	idempotent := map[string]bool{"Read": true, "Write": true, "Glob": true, "Grep": true}
	for _, name := range tools.Names() {
		if name == "Bash" && !unixShell {
			continue
		}
		tool, err := tools.ByName(name, cfg)
		if err != nil {
			t.Fatalf("ByName(%q): %v", name, err)
		}
		if s := tool.Spec(); s.Name != name || s.Idempotent != idempotent[name] || len(s.Parameters) == 0 {
			t.Errorf("ByName(%q).Spec() = %+v", name, s)
		}
	}
	if got, err := call(t, mustByName(t, "clock", cfg), obj{}); err != nil || got != "2026-01-02T03:04:05Z" {
		t.Errorf("clock = %q, %v", got, err)
	}

	_, err := tools.ByName("WebFetch", cfg)
	if !errors.Is(err, tools.ErrUnknownTool) || !strings.Contains(err.Error(), `"WebFetch"`) || !strings.Contains(err.Error(), "Grep") {
		t.Errorf("ByName(WebFetch) = %v; want ErrUnknownTool naming it and the known tools", err)
	}
	if _, err := tools.ByName("bash", cfg); !errors.Is(err, tools.ErrUnknownTool) {
		t.Errorf("names are case-sensitive, as matchers are: ByName(bash) = %v", err)
	}
	for _, name := range []string{"Read", "Grep", "read_file", "Bash"} {
		if _, err := tools.ByName(name, tools.Config{}); !errors.Is(err, tools.ErrInvalidConfig) {
			t.Errorf("ByName(%q) without a root = %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := tools.ByName("Read", tools.Config{Root: root + "/missing"}); !errors.Is(err, tools.ErrInvalidConfig) {
		t.Errorf("ByName(Read) with a missing root = %v, want ErrInvalidConfig", err)
	}
}

func mustByName(t *testing.T, name string, cfg tools.Config) loop.Tool {
	t.Helper()
	tool, err := tools.ByName(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func TestByNames(t *testing.T) {
	cfg := tools.Config{Root: t.TempDir()}
	ts, err := tools.ByNames([]string{"Read", "Glob", "calculator"}, cfg)
	if err != nil || len(ts) != 3 || ts[0].Spec().Name != "Read" || ts[2].Spec().Name != "calculator" {
		t.Fatalf("ByNames = %v, %v", ts, err)
	}
	if _, err := tools.ByNames([]string{"Read", "Read"}, cfg); !errors.Is(err, tools.ErrInvalidConfig) {
		t.Errorf("a name twice = %v, want ErrInvalidConfig", err)
	}
	if _, err := tools.ByNames([]string{"Read", "Nope"}, cfg); !errors.Is(err, tools.ErrUnknownTool) {
		t.Errorf("an unknown name = %v, want ErrUnknownTool", err)
	}
}
