package claudecode_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/interceptors"
)

func allowFactory(h claudecode.Handler, reg interceptors.Registration) (interceptors.Interceptor, error) {
	return interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil }), nil
}

func mustSettings(t *testing.T, name, text string) *claudecode.Settings {
	t.Helper()
	s, err := claudecode.ParseSettings([]byte(text), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRegister(t *testing.T) {
	a := mustSettings(t, "a.json", `{"hooks": {
	  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}, {"type": "command", "command": "y"}]}],
	  "Stop": [{"hooks": [{"type": "command", "command": "z"}]}],
	  "SessionEnd": [{"hooks": [{"type": "command", "command": "w"}]}]}}`)
	off := mustSettings(t, "off.json", `{"disableAllHooks": true, "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}}`)
	b := mustSettings(t, "b.json", `{"hooks": {"PreToolUse": [{"matcher": "mcp__.*", "hooks": [{"type": "http", "url": "http://x"}]}]}}`)
	chain := interceptors.NewChain()
	hooks, err := claudecode.Register(chain, []*claudecode.Settings{a, off, b}, claudecode.Options{Order: 100,
		Factories: map[string]claudecode.Factory{"command": allowFactory, "http": allowFactory}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range chain.Registrations(events.StageToolBefore) {
		got = append(got, r.Plugin+"@"+r.Tools)
	}
	if strings.Join(got, " ") != "claude-PreToolUse-0-0@Bash claude-PreToolUse-0-1@Bash claude3-PreToolUse-0-0@re:mcp__.*" {
		t.Fatalf("tool.before registrations %v", got)
	}
	regs := hooks.Registrations()
	if len(regs) != 4 || regs[0].Order != 100 || regs[1].Order != 101 || regs[2].Stage != events.StageStop || regs[3].Order != 104 {
		t.Fatalf("registrations %+v", regs)
	}
	if hooks.Len() != 5 { // SessionEnd observes
		t.Fatalf("Len %d", hooks.Len())
	}
	hooks.Unregister()
	if chain.Has(events.StageToolBefore, "Bash", "a") || chain.Has(events.StageStop, "", "a") {
		t.Fatal("Unregister left registrations")
	}
}

func TestRegisterErrors(t *testing.T) {
	s := mustSettings(t, "s.json", `{"hooks": {
	  "PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}],
	  "Stop": [{"hooks": [{"type": "prompt", "prompt": "done?"}]}]}}`)
	chain := interceptors.NewChain()
	_, err := claudecode.Register(chain, []*claudecode.Settings{s}, claudecode.Options{Factories: map[string]claudecode.Factory{"command": allowFactory}})
	if !errors.Is(err, claudecode.ErrSettings) || !strings.Contains(err.Error(), `s.json: hooks.Stop[0].hooks[0]: no factory for hooks of type "prompt" (this worker runs command)`) {
		t.Fatalf("missing factory: %v", err)
	}
	if chain.Has(events.StageToolBefore, "Bash", "a") {
		t.Fatal("a failed Register left a registration")
	}
	_, err = claudecode.Register(chain, []*claudecode.Settings{s}, claudecode.Options{Factories: map[string]claudecode.Factory{
		"command": func(claudecode.Handler, interceptors.Registration) (interceptors.Interceptor, error) {
			return nil, errors.New("no root")
		},
		"prompt": claudecode.FromRaw(func(json.RawMessage, interceptors.Registration) (interceptors.Interceptor, error) { return nil, nil }),
	}})
	if !errors.Is(err, claudecode.ErrSettings) || !strings.Contains(err.Error(), "hooks.PreToolUse[0].hooks[0]: no root") {
		t.Fatalf("factory error: %v", err)
	}
	if _, err := claudecode.Register(chain, nil, claudecode.Options{Prefix: "a.b"}); !errors.Is(err, claudecode.ErrSettings) {
		t.Fatalf("bad prefix: %v", err)
	}
}
