package interceptors_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

func TestDisabledPluginIsSkippedAndRecorded(t *testing.T) {
	chain := interceptors.NewChain()
	var calls atomic.Int32
	deny := interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		calls.Add(1)
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no"}, nil
	})
	for _, mode := range []interceptors.Mode{interceptors.ModeMutate, interceptors.ModeValidate} {
		plugin := "guard-" + string(mode)
		if _, err := chain.Register(interceptors.Registration{Plugin: plugin, Stage: events.StageToolBefore, Mode: mode}, deny); err != nil {
			t.Fatal(err)
		}
	}
	child := chain.Child() // a run's chain sees its parent's kill switch
	at := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	chain.Disable("guard-mutate", interceptors.Disabled{By: "alice", At: at, Reason: "broken"})
	chain.Disable("guard-validate", interceptors.Disabled{At: at})
	ev := toolEvent(t, "bash")

	out, err := child.Run(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 || out.Decision != interceptors.Allow || len(out.Records) != 2 {
		t.Fatalf("disabled: %d calls, outcome %+v", calls.Load(), out)
	}
	r := out.Records[0]
	if r.Decision != interceptors.Skipped || r.Reason != "plugin guard-mutate disabled by alice at 2025-05-01T10:00:00Z: broken" ||
		r.Annotations[interceptors.AnnotationDisabledBy] != "alice" {
		t.Fatalf("skipped record %+v", r)
	}
	if st, p := r.Audit(); st != events.StageHookDecided || p.(events.HookDecided).Decision != "skipped" {
		t.Fatalf("audit of a skip: %s %+v", st, p)
	}
	if got := chain.DisabledPlugins(); len(got) != 2 || got["guard-mutate"].By != "alice" {
		t.Fatalf("DisabledPlugins %+v", got)
	}

	if !child.Enable("guard-validate") || child.Enable("guard-validate") {
		t.Fatal("Enable: want true once, then false")
	}
	out, err = chain.Run(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || out.Decision != interceptors.Deny || out.Plugin != "guard-validate" {
		t.Fatalf("enabled again: %d calls, outcome %+v", calls.Load(), out)
	}
}

func toolEvent(t *testing.T, tool string) *events.Event {
	t.Helper()
	ev, err := events.New(events.StageToolBefore, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: "r", Subject: tool},
		events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: tool, Arguments: []byte(`{"cmd":"ls"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}
