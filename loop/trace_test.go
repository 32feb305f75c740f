package loop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/events/tracectx"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
)

func mustParse(t *testing.T, e *events.Event) tracectx.Context {
	t.Helper()
	tc, err := tracectx.Parse(e.Traceparent)
	if err != nil {
		t.Fatalf("%s #%d (run %s): %v", e.Stage, e.Seq, e.RunID, err)
	}
	return tc
}

// Every event carries the trace context it was produced in: one trace for
// the parent run and its child, the caller's when the request carries one;
// the run's span, the model call's, the tool call's; a hook's records the
// intercepted event's; and an interceptor's ctx names its own call's span.
func TestTraceContextOfEvents(t *testing.T) {
	chain := interceptors.NewChain()
	var seen []tracectx.Context
	register(t, chain, interceptors.Registration{Plugin: "watch", Stage: events.StageToolBefore},
		func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			tc, ok := tracectx.HookCall(ctx, "watch")
			if !ok {
				return nil, errors.New("no hook call in ctx")
			}
			seen = append(seen, tc)
			return nil, nil
		})
	ts := newTeam(t, delegating, chain, nil)
	caller := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	res, err := ts.planner.Run(ctxT(t), &events.RunRequest{AgentID: "planner", SessionID: "p1", Prompt: "go", Traceparent: caller})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("run: %+v, %v", res, err)
	}
	want, _ := tracectx.Parse(caller)
	evs := ts.j.Events()
	var child string
	for _, e := range evs {
		if e.RunID != res.RunID {
			child = e.RunID
		}
	}
	if child == "" {
		t.Fatal("no child run")
	}
	stored := map[string]*events.Event{}
	for _, e := range evs {
		stored[e.ID] = e
	}
	var taskCall string
	for _, e := range evs {
		tc := mustParse(t, e)
		if tc.Trace != want.Trace {
			t.Errorf("%s of run %s: trace %s, want the caller's %s", e.Stage, e.RunID, tc.Trace, want.Trace)
		}
		var span tracectx.SpanID
		switch e.Stage {
		case events.StageModelResponded, events.StageModelFailed:
			span = tracectx.ChatSpan(e.RunID, e.Step)
		case events.StageToolBefore, events.StageToolAfter, events.StageSubagentBefore, events.StageSubagentAfter:
			p, err := e.Payload()
			if err != nil {
				t.Fatal(err)
			}
			var call string
			switch p := p.(type) {
			case *events.ToolBefore:
				call = p.Call.ID
				if p.Call.Name == loop.TaskTool {
					taskCall = call
				}
			case *events.ToolAfter:
				call = p.Call.ID
			case *events.SubagentBefore:
				call = p.CallID
			case *events.SubagentAfter:
				call = p.CallID
			}
			span = tracectx.ToolSpan(e.RunID, call)
		case events.StageHookDecided:
			var p events.HookDecided
			if err := e.DecodeData(&p); err != nil {
				t.Fatal(err)
			}
			span = mustParse(t, stored[p.EventID]).Span
		default:
			span = tracectx.RunSpan(e.RunID)
		}
		if tc.Span != span {
			t.Errorf("%s #%d of run %s: span %s, want %s", e.Stage, e.Seq, e.RunID, tc.Span, span)
		}
		if e.Stage == events.StageRunStarted {
			var p events.RunStarted
			if err := e.DecodeData(&p); err != nil {
				t.Fatal(err)
			}
			wantParent := caller
			if e.RunID == child {
				wantParent = tracectx.Context{Trace: want.Trace, Span: tracectx.ToolSpan(res.RunID, taskCall), Flags: want.Flags}.String()
			}
			if p.ParentTraceparent != wantParent {
				t.Errorf("run.started of %s: parent %q, want %q", e.RunID, p.ParentTraceparent, wantParent)
			}
		}
	}
	decided := payloadsOf[events.HookDecided](t, evs, events.StageHookDecided)
	if len(decided) != 2 || len(seen) != 2 {
		t.Fatalf("%d hook.decided, %d calls; want 2 (the Task call, the child's calculator)", len(decided), len(seen))
	}
	for i, d := range decided {
		if seen[i].Span != tracectx.HookSpan(d.EventID, "watch") || seen[i].Trace != want.Trace {
			t.Errorf("call %d: ctx span %s, want HookSpan(%s)", i, seen[i].Span, d.EventID)
		}
	}
}

// A run without a caller's trace context has its own trace: its id's.
func TestTraceOfItsOwn(t *testing.T) {
	ts := newTeam(t, delegating, nil, nil)
	res, err := ts.planner.Run(ctxT(t), &events.RunRequest{AgentID: "planner", SessionID: "p1", Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ts.j.Events() {
		if tc := mustParse(t, e); tc.Trace != tracectx.RunTrace(res.RunID) {
			t.Fatalf("%s of run %s: trace %s, want %s", e.Stage, e.RunID, tc.Trace, tracectx.RunTrace(res.RunID))
		}
	}
}

// A malformed traceparent is refused, nothing published.
func TestBadTraceparent(t *testing.T) {
	ts := newTeam(t, delegating, nil, nil)
	_, err := ts.planner.Run(ctxT(t), &events.RunRequest{AgentID: "planner", SessionID: "p1", Prompt: "go", Traceparent: "00-abc"})
	if !errors.Is(err, loop.ErrInvalidRequest) || !errors.Is(err, tracectx.ErrTraceparent) {
		t.Fatalf("err = %v", err)
	}
	if n := len(ts.j.Events()); n != 0 {
		t.Fatalf("%d events published", n)
	}
}
