package interceptors_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

func TestRegisterFunc(t *testing.T) {
	chain := interceptors.NewChain()
	calls := 0
	unregister, err := chain.RegisterFunc(events.StageToolBefore, "audit", func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		calls++
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	regs := chain.Registrations(events.StageToolBefore)
	if len(regs) != 1 || regs[0].Plugin != "audit" || regs[0].Timeout != interceptors.DefaultTimeout || regs[0].Policy != interceptors.PolicyIgnore {
		t.Fatalf("registrations %+v", regs)
	}
	ev, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r", Subject: "clock"},
		events.ToolBefore{Call: events.ToolCall{ID: "1", Name: "clock"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := chain.Run(context.Background(), ev)
	if err != nil || out.Decision != interceptors.Allow || calls != 1 {
		t.Fatalf("Run = %+v, %v, calls %d", out, err, calls)
	}
	unregister()
	if chain.Has(events.StageToolBefore, "clock", "a") {
		t.Fatal("still registered after unregister")
	}
	// The privileged stages still need trust.
	if _, err := chain.RegisterFunc(events.StageContextAssembled, "thirdparty", func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return nil, nil
	}); !errors.Is(err, interceptors.ErrPrivileged) {
		t.Fatalf("RegisterFunc on a privileged stage = %v", err)
	}
}
