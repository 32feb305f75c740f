package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hookbus/hookbus/audit/backtest"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// observer shadow backtests over NATS and prints the report as JSON and as
// a table (the backtest's rules are audit/backtest's tests): over 100
// recorded tool.before events in which the candidate denies a known subset
// it lists exactly that subset; the events the candidate itself modified
// (its input not reconstructible) are counted, not sent.
func TestShadowBacktestListsExactlyTheDifferences(t *testing.T) {
	const n = 100
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	ctx := context.Background()

	publish := func(st events.Stage, m events.Meta, p any) *events.Event {
		t.Helper()
		e, err := events.New(st, m, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.PublishSync(ctx, e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	var want []string // event ids the candidate decides differently on
	notReconstructible := 0
	for i := range n {
		run := fmt.Sprintf("r%d", i/10)
		m := events.Meta{Source: "test", AgentID: "a", SessionID: "s" + run, RunID: run, Step: 1, ID: events.NewID(), Subject: "Bash"}
		// The loop records the chain's decisions, then the event.
		rm := m
		rm.ID, rm.Subject = events.NewID(), "guard"
		publish(events.StageHookDecided, rm, events.HookDecided{Plugin: "guard", Stage: events.StageToolBefore, Decision: "allow", EventID: m.ID})
		if i%100 == 0 {
			rm.ID, rm.Subject = events.NewID(), "candidate"
			publish(events.StageHookDecided, rm, events.HookDecided{Plugin: "candidate", Stage: events.StageToolBefore, Decision: "modify",
				Patch: json.RawMessage(`[{"op":"replace","path":"/call/arguments/cmd","value":"x"}]`), EventID: m.ID})
			notReconstructible++
		} else if i%7 == 0 {
			want = append(want, m.ID)
		}
		publish(events.StageToolBefore, m, events.ToolBefore{Call: events.ToolCall{ID: fmt.Sprint("c", i), Name: "Bash",
			Arguments: json.RawMessage(fmt.Sprintf(`{"cmd":"echo %d"}`, i))}})
	}

	svc, err := remote.Serve(ctx, nc, remote.ServeConfig{Plugin: "candidate", Stages: []events.Stage{events.StageToolBefore}},
		interceptors.Func(func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			tb, err := events.Data[events.ToolBefore](req.Event)
			if err != nil {
				return nil, err
			}
			var args struct{ Cmd string }
			if err := json.Unmarshal(tb.Call.Arguments, &args); err != nil {
				return nil, err
			}
			var k int
			fmt.Sscanf(args.Cmd, "echo %d", &k)
			if k%7 == 0 {
				return &interceptors.Decision{Kind: interceptors.Deny, Reason: "multiple of 7"}, nil
			}
			return nil, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })

	code, out, errOut := observe(t, "shadow", "--stage", "tool.before", "--plugin", "candidate", "--json", "--nats", srv.ClientURL())
	if code != exitOK {
		t.Fatalf("observer shadow: exit %d\n%s", code, errOut)
	}
	var rep backtest.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	var got []string
	for _, r := range rep.Differences {
		got = append(got, r.EventID)
		if r.Recorded != "allow" || r.Candidate != "deny" || r.Reason != "multiple of 7" || r.Agent != "a" || r.Subject != "Bash" {
			t.Fatalf("row %+v", r)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("differences: %d events, want %d (the multiples of 7)", len(got), len(want))
	}
	if rep.Scanned != n || rep.Sent != n-notReconstructible || rep.NotReconstructible != notReconstructible || rep.Differ != len(want) || rep.Failed != 0 {
		t.Fatalf("report counts %+v", rep)
	}

	// The table says the same.
	_, table, _ := observe(t, "shadow", "--stage", "tool.before", "--plugin", "candidate", "--agent", "a", "--nats", srv.ClientURL())
	if !strings.Contains(table, fmt.Sprintf("%d events read, %d sent, %d differ, %d not reconstructible", n, n-notReconstructible, len(want), notReconstructible)) ||
		strings.Count(table, "multiple of 7") != len(want) {
		t.Fatalf("table:\n%s", table)
	}
	// A candidate nobody serves: every call fails, and the report says so.
	_, out, _ = observe(t, "shadow", "--stage", "tool.before", "--plugin", "nobody", "--session", "sr0", "--json", "--nats", srv.ClientURL())
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Failed != 10 || rep.Differences[0].Candidate != "failed:no_responders" {
		t.Fatalf("unserved candidate: %v %+v", err, rep)
	}
}

// observer shadow sends the candidate only the calls its registration's
// filters match (here the shell kind, whatever the tool's name), as the
// chain calls it; flags replace the registered filters. The others are
// counted as not matched, never as differences.
func TestShadowRespectsTheCandidatesFilters(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	ctx := context.Background()
	publish := func(st events.Stage, m events.Meta, p any) {
		t.Helper()
		e, err := events.New(st, m, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.PublishSync(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	calls := []events.ToolCall{
		{Name: "Bash", Arguments: json.RawMessage(`{"command":"rm -rf a"}`)},
		{Name: "run_shell_command", Arguments: json.RawMessage(`{"command":"rm -rf b"}`)},
		{Name: "Read", Arguments: json.RawMessage(`{"file_path":".env"}`)},
		{Name: "read_file", Arguments: json.RawMessage(`{"absolute_path":"/p/.env"}`)},
	}
	harnesses := []events.Harness{events.HarnessClaude, events.HarnessGemini, events.HarnessClaude, events.HarnessGemini}
	for i, c := range calls {
		c.ID = fmt.Sprint("c", i)
		c = c.WithAction(harnesses[i])
		m := events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: "r", Step: 1, ID: events.NewID(), Subject: c.Name}
		if c.Name == "Read" { // a guard denied it: the candidate would agree
			rm := m
			rm.ID, rm.Subject = events.NewID(), "guard"
			publish(events.StageHookDecided, rm, events.HookDecided{Plugin: "guard", Stage: events.StageToolBefore, Decision: "deny", EventID: m.ID})
		}
		publish(events.StageToolBefore, m, events.ToolBefore{Call: c})
	}
	var mu sync.Mutex
	var sent []string
	svc, err := remote.Serve(ctx, nc, remote.ServeConfig{Plugin: "no-rm", Stages: []events.Stage{events.StageToolBefore}},
		interceptors.Func(func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			mu.Lock()
			sent = append(sent, req.Event.Subject)
			mu.Unlock()
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "denied"}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	if err := remote.NewRegistry(b).Put(ctx, interceptors.Registration{Plugin: "no-rm", Stage: events.StageToolBefore, Kinds: "shell"}); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) backtest.Report {
		t.Helper()
		mu.Lock()
		sent = nil
		mu.Unlock()
		code, out, errOut := observe(t, append([]string{"shadow", "--stage", "tool.before", "--plugin", "no-rm", "--json", "--nats", srv.ClientURL()}, args...)...)
		if code != exitOK {
			t.Fatalf("observer shadow %v: exit %d\n%s", args, code, errOut)
		}
		var rep backtest.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("report: %v\n%s", err, out)
		}
		return rep
	}
	sentTo := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(sent, " ")
	}
	subjects := func(rep backtest.Report) string {
		var s []string
		for _, d := range rep.Differences {
			s = append(s, d.Subject)
		}
		return strings.Join(s, " ")
	}

	rep := run()
	if rep.Scanned != 4 || rep.Sent != 2 || rep.NotMatched != 2 || subjects(rep) != "Bash run_shell_command" || sentTo() != "Bash run_shell_command" {
		t.Fatalf("registered kinds shell: report %+v, candidate sent %v", rep, sentTo())
	}
	// Flags replace the registered filters.
	rep = run("--kinds", "file.read")
	if rep.Sent != 2 || rep.NotMatched != 2 || subjects(rep) != "read_file" || sentTo() != "Read read_file" {
		t.Fatalf("--kinds file.read: report %+v, candidate sent %v", rep, sentTo())
	}
	rep = run("--kinds", "shell|file.read", "--tools", "Bash|Read")
	if rep.Sent != 2 || sentTo() != "Bash Read" {
		t.Fatalf("--tools Bash|Read: report %+v, candidate sent %v", rep, sentTo())
	}
	if code, _, errOut := observe(t, "shadow", "--stage", "tool.before", "--plugin", "no-rm", "--kinds", "bash", "--nats", srv.ClientURL()); code == exitOK || !strings.Contains(errOut, "not a kind") {
		t.Fatalf("--kinds bash: exit %d\n%s", code, errOut)
	}
}
