package backtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/hookbus/hookbus/audit/backtest"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// A backtest over 1,000 recorded tool.before events in which the candidate
// denies a known subset lists exactly that subset; the events the candidate
// itself modified (its input not reconstructible: the model's reply is not
// recorded) are counted, not sent.
func TestRunListsExactlyTheDifferences(t *testing.T) {
	const n = 1000
	_, nc := bustest.Start(t)
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

	reg := interceptors.Registration{Plugin: "candidate", Stage: events.StageToolBefore, Timeout: interceptors.DefaultTimeout, Uncapped: true}
	rep, err := backtest.Run(ctx, b, backtest.Config{Registration: reg})
	if err != nil {
		t.Fatal(err)
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

	// A candidate nobody serves: every call fails, and the report says so.
	reg.Plugin = "nobody"
	rep, err = backtest.Run(ctx, b, backtest.Config{Registration: reg, Filter: bus.Filter{Session: "sr0"}})
	if err != nil || rep.Failed != 10 || rep.Differences[0].Candidate != "failed:no_responders" {
		t.Fatalf("unserved candidate: %v %+v", err, rep)
	}
}
