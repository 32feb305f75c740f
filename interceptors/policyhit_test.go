package interceptors_test

import (
	"context"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// A decision's policy hit reaches the call's hook.decided; a remote
// interceptor's does not (it cannot speak for a policy).
func TestPolicyHitRecorded(t *testing.T) {
	hit := &events.PolicyHit{Name: "no-rm", Version: "sha256:0123456789abcdef", Rule: "rm-rf", Mode: "enforce", Action: "deny", Enforced: true}
	decides := func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return &interceptors.Decision{Kind: interceptors.Allow, Policy: hit}, nil
	}
	c := interceptors.NewChain()
	for _, r := range []interceptors.Registration{
		{Plugin: "policy-no-rm", Stage: events.StageToolBefore, Builtin: true},
		{Plugin: "remote", Stage: events.StageToolBefore, Remote: true},
	} {
		if _, err := c.Register(r, interceptors.BoundFunc(decides)); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r"},
		events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "Bash"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Run(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Records) != 2 {
		t.Fatalf("records = %+v", out.Records)
	}
	if got := out.Records[0].HookDecided().Policy; got != hit {
		t.Errorf("in-process hook.decided policy = %+v, want %+v", got, hit)
	}
	if got := out.Records[1].HookDecided().Policy; got != nil {
		t.Errorf("remote hook.decided policy = %+v, want none", got)
	}
}
