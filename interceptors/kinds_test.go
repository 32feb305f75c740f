package interceptors_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// A Kinds matcher selects calls by their normalized action, whatever the
// tool's native name: one registration on shell sees every harness's shell
// tool, and none of the others; a call with no action matches no Kinds.
func TestChainMatchesByKind(t *testing.T) {
	chain := interceptors.NewChain()
	var seen []string
	if _, err := chain.Register(interceptors.Registration{Plugin: "no-rm", Stage: events.StageToolBefore, Kinds: "shell"},
		interceptors.Func(func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			seen = append(seen, req.Event.Subject)
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no shell"}, nil
		})); err != nil {
		t.Fatal(err)
	}
	if _, err := chain.Register(interceptors.Registration{Plugin: "files", Stage: events.StageToolBefore, Kinds: "file.*", Tools: "re:^(Write|write_file)$"},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil })); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		h          events.Harness
		name, args string
		shell      bool
		files      int // registrations that match
	}{
		{events.HarnessHookbus, "Bash", `{"command":"rm -rf x"}`, true, 1},
		{events.HarnessClaude, "Bash", `{"command":"rm -rf x"}`, true, 1},
		{events.HarnessGemini, "run_shell_command", `{"command":"rm -rf x"}`, true, 1},
		{events.HarnessCodex, "shell", `{"command":["rm","-rf","x"]}`, true, 1},
		{events.HarnessClaude, "Write", `{"file_path":"a"}`, false, 1},
		{events.HarnessGemini, "write_file", `{"file_path":"a"}`, false, 1},
		{events.HarnessGemini, "replace", `{"file_path":"a"}`, false, 0}, // a file kind, but not a tool named
		{events.HarnessClaude, "WebFetch", `{"url":"https://x"}`, false, 0},
	} {
		call := events.ToolCall{ID: "c", Name: tc.name, Arguments: []byte(tc.args)}.WithAction(tc.h)
		ev, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r", Subject: tc.name}, events.ToolBefore{Call: call})
		if err != nil {
			t.Fatal(err)
		}
		want := tc.files
		if tc.shell {
			want++
		}
		if n := chain.MatchesCall(events.StageToolBefore, tc.name, call.Kind(), "a"); n != want {
			t.Errorf("%s %s: MatchesCall = %d, want %d", tc.h, tc.name, n, want)
		}
		seen = nil
		out, err := chain.Run(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if denied := out.Decision == interceptors.Deny; denied != tc.shell || len(out.Records) != want {
			t.Errorf("%s %s: decision %s with %d records (seen %v), want deny %v with %d", tc.h, tc.name, out.Decision, len(out.Records), seen, tc.shell, want)
		}
	}
	// A call with no action (recorded before actions, or from a producer
	// that does not set one) is not matched by kind.
	if n := chain.Matches(events.StageToolBefore, "Bash", "a"); n != 0 {
		t.Errorf("Matches without a kind = %d, want 0", n)
	}
	ev, _ := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r", Subject: "Bash"},
		events.ToolBefore{Call: events.ToolCall{ID: "c", Name: "Bash", Arguments: []byte(`{"command":"rm -rf x"}`)}})
	if out, _ := chain.Run(context.Background(), ev); len(out.Records) != 0 {
		t.Errorf("a call with no action ran %d interceptors", len(out.Records))
	}
}

func TestKindsValidation(t *testing.T) {
	for _, tc := range []struct {
		reg interceptors.Registration
		ok  bool
	}{
		{interceptors.Registration{Plugin: "p", Stage: events.StageToolBefore, Kinds: "shell"}, true},
		{interceptors.Registration{Plugin: "p", Stage: events.StageToolAfter, Kinds: "shell|file.write|mcp"}, true},
		{interceptors.Registration{Plugin: "p", Stage: events.StageToolBefore, Kinds: "file.*"}, true},
		{interceptors.Registration{Plugin: "p", Stage: events.StageToolBefore, Kinds: "bash"}, false},      // no such kind
		{interceptors.Registration{Plugin: "p", Stage: events.StageToolBefore, Kinds: "shell|"}, false},    // empty alternative
		{interceptors.Registration{Plugin: "p", Stage: events.StageToolBefore, Kinds: "re:sh.*"}, false},   // no regexps
		{interceptors.Registration{Plugin: "p", Stage: events.StageSubagentBefore, Kinds: "agent"}, false}, // not a tool stage
		{interceptors.Registration{Plugin: "p", Stage: events.StageIntake, Kinds: "shell"}, false},
	} {
		err := tc.reg.Validate()
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, interceptors.ErrInvalidRegistration) {
			t.Errorf("%s %q: %v, want ok %v", tc.reg.Stage, tc.reg.Kinds, err, tc.ok)
		}
	}
	r := interceptors.Registration{Plugin: "p", Stage: events.StageToolBefore, Kinds: "shell", Tools: "Bash|shell"}
	if !r.MatchesCall("Bash", events.KindShell, "a") || r.MatchesCall("Bash", "", "a") || r.MatchesCall("Read", events.KindShell, "a") || r.Matches("Bash", "a") {
		t.Error("Registration.MatchesCall does not need both the tool and the kind")
	}
}
