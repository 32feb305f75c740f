package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hookbus/hookbus/audit"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/interceptors"
)

// guard is a remote interceptor on tool.before: it denies rm -rf and
// rewrites "ls" to "ls -la".
func guard(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	var p events.ToolBefore
	if err := req.Event.DecodeData(&p); err != nil {
		return nil, err
	}
	var args struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(p.Call.Arguments, &args)
	switch {
	case strings.Contains(args.Command, "rm -rf"):
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no rm -rf on this machine"}, nil
	case args.Command == "ls":
		return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/call/arguments/command", Value: json.RawMessage(`"ls -la"`)}}}, nil
	}
	return nil, nil
}

// startGuard serves guard over NATS and returns a chain calling it, as
// the registry would have the loop call it.
func startGuard(t *testing.T, b *bus.Bus) *interceptors.Chain {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := remote.Serve(ctx, b.Conn(), remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}}, interceptors.Func(guard)); err != nil {
		t.Fatal(err)
	}
	chain := interceptors.NewChain()
	if _, err := remote.Register(b, chain, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Tools: "Bash"}); err != nil {
		t.Fatal(err)
	}
	return chain
}

func input(t *testing.T, session, event string, fields string) *claudecode.Input {
	t.Helper()
	raw := fmt.Sprintf(`{"session_id": %q, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "hook_event_name": %q%s}`, session, event, fields)
	in, err := claudecode.ParseInput([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func bash(id, command string) string {
	return fmt.Sprintf(`, "tool_name": "Bash", "tool_use_id": %q, "tool_input": {"command": %q}`, id, command)
}

func handle(t *testing.T, br *bridge.Bridge, in *claudecode.Input) map[string]any {
	t.Helper()
	out, err := br.Handle(context.Background(), in)
	if err != nil {
		t.Fatalf("%s: %v", in.HookEventName, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.JSON(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A Claude Code session through the bridge: the remote interceptor denies
// and rewrites, the answers say so in Claude Code's format, and the
// session's events are in the stream as runs with ordered seqs.
func TestRoundTrip(t *testing.T) {
	b := bustest.StartBus(t)
	br, err := bridge.New(bridge.Config{Store: b, Hooks: startGuard(t, b)})
	if err != nil {
		t.Fatal(err)
	}
	const s = "5f0c6a2e-8d1b-4f7a-9c3e-1a2b3c4d5e6f"
	handle(t, br, input(t, s, "SessionStart", `, "source": "startup"`))
	handle(t, br, input(t, s, "UserPromptSubmit", `, "prompt": "tidy up"`))
	deny := handle(t, br, input(t, s, "PreToolUse", bash("toolu_1", "rm -rf /")))
	spec, _ := deny["hookSpecificOutput"].(map[string]any)
	if spec["permissionDecision"] != "deny" || !strings.Contains(fmt.Sprint(spec["permissionDecisionReason"]), "no rm -rf on this machine") {
		t.Fatalf("deny answer: %v", deny)
	}
	mod := handle(t, br, input(t, s, "PreToolUse", bash("toolu_2", "ls")))
	spec, _ = mod["hookSpecificOutput"].(map[string]any)
	if in, _ := spec["updatedInput"].(map[string]any); in["command"] != "ls -la" {
		t.Fatalf("modify answer: %v", mod)
	}
	handle(t, br, input(t, s, "PostToolUse", bash("toolu_2", "ls -la")+`, "tool_response": {"stdout": "a b", "stderr": ""}`))
	handle(t, br, input(t, s, "Notification", `, "message": "hi"`)) // a harness.event
	handle(t, br, input(t, s, "Stop", `, "stop_hook_active": false, "last_assistant_message": "done"`))
	handle(t, br, input(t, s, "SessionEnd", `, "reason": "other"`))

	evs, err := b.SessionEvents(context.Background(), bridge.DefaultAgent, s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	runs := map[string]uint64{}
	for _, e := range evs {
		if e.Seq != runs[e.RunID]+1 {
			t.Errorf("%s of run %s has seq %d after %d", e.Stage, e.RunID, e.Seq, runs[e.RunID])
		}
		runs[e.RunID] = e.Seq
		got = append(got, fmt.Sprintf("%d:%s", len(runs), e.Stage))
	}
	// SessionEnd after the run's end: a harness.event after it, no run of
	// its own.
	want := "1:run.started 1:intake 1:hook.decided 1:tool.before 1:hook.decided 1:tool.before 1:tool.after 1:harness.event 1:stop 1:run.completed 1:harness.event"
	if strings.Join(got, " ") != want {
		t.Fatalf("session:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	// The stored tool.before is the rewritten call.
	var tb events.ToolBefore
	if err := evs[5].DecodeData(&tb); err != nil || !strings.Contains(string(tb.Call.Arguments), "ls -la") {
		t.Fatalf("stored tool.before: %s %v", evs[5].Data, err)
	}
	// Its action is the rewritten call's.
	if a := tb.Call.Action; a == nil || a.Kind != events.KindShell || a.Command != "ls -la" {
		t.Fatalf("stored tool.before's action: %+v", a)
	}
}

// Many bridge invocations at once on one session (Claude Code runs hooks
// in parallel): every event is stored once, ids are unique, and each
// run's seqs are unique and in stream order.
func TestParallelInvocations(t *testing.T) {
	b := bustest.StartBus(t)
	const s, n = "parallel", 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each its own Bridge, as each would be its own process.
			br, err := bridge.New(bridge.Config{Store: b})
			if err != nil {
				errs <- err
				return
			}
			if _, err := br.Handle(context.Background(), input(t, s, "PreToolUse", bash(fmt.Sprintf("toolu_%d", i), "true"))); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	evs, err := b.SessionEvents(context.Background(), bridge.DefaultAgent, s)
	if err != nil {
		t.Fatal(err)
	}
	ids, calls := map[string]bool{}, map[string]bool{}
	runs := map[string]uint64{}
	started := 0
	for _, e := range evs {
		if ids[e.ID] {
			t.Fatalf("id %s twice", e.ID)
		}
		ids[e.ID] = true
		if e.Seq != runs[e.RunID]+1 {
			t.Fatalf("%s of run %s: seq %d after %d", e.Stage, e.RunID, e.Seq, runs[e.RunID])
		}
		runs[e.RunID] = e.Seq
		switch e.Stage {
		case events.StageRunStarted:
			started++
		case events.StageToolBefore:
			calls[e.Subject+":"+string(e.Data)] = true
		}
	}
	if len(runs) != 1 || started != 1 || len(evs) != n+1 || len(calls) != n {
		t.Fatalf("%d runs, %d run.started, %d events, %d calls (want 1, 1, %d, %d)", len(runs), started, len(evs), len(calls), n+1, n)
	}
	// The run's events form one hash chain, whichever process wrote each.
	var v audit.Verifier
	for _, e := range evs {
		v.Add(e)
	}
	for _, vd := range v.Verdicts() {
		for _, p := range vd.Problems {
			if p.Kind != audit.ProblemNoEnd && p.Kind != audit.ProblemUnsigned {
				t.Errorf("run %s: %s at seq %d: %s", vd.RunID, p.Kind, p.Seq, p.Detail)
			}
		}
	}
}

// NATS gone: Handle answers by the policy before its timeout.
func TestOutagePolicy(t *testing.T) {
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	srv.Shutdown()
	for _, tc := range []struct {
		policy interceptors.Policy
		want   string
	}{
		{interceptors.PolicyIgnore, `"systemMessage":"hookbus could not record or check this PreToolUse event`},
		{interceptors.PolicyFail, `"permissionDecision":"deny"`},
	} {
		br, err := bridge.New(bridge.Config{Store: b, Policy: tc.policy, Timeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := br.Handle(ctx, input(t, "down", "PreToolUse", bash("toolu_1", "ls")))
		cancel()
		if !errors.Is(err, bridge.ErrUnrecorded) || out == nil || !strings.Contains(string(out.JSON()), tc.want) {
			t.Fatalf("%s: %s, %v", tc.policy, out.JSON(), err)
		}
	}
}
