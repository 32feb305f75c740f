package remote_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// syncEnv is a provisioned bus with a trust watch, a chain trusting it and
// a HookSync keeping the chain in step with the registry.
type syncEnv struct {
	b     *bus.Bus
	reg   *remote.Registry
	trust *remote.Trust
	chain *interceptors.Chain
	hs    *remote.HookSync
	log   *bustest.Buffer
}

// newSyncEnv provisions a bus, runs before (registry writes to find at
// start) and starts the sync.
func newSyncEnv(t *testing.T, before func(*remote.Registry)) *syncEnv {
	t.Helper()
	log := &bustest.Buffer{}
	b := bustest.StartBus(t, bus.WithLogger(slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	env := &syncEnv{b: b, reg: remote.NewRegistry(b), log: log}
	if before != nil {
		before(env.reg)
	}
	ctx := testCtx(t)
	trust, err := remote.WatchTrust(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(trust.Stop)
	env.trust = trust
	env.chain = interceptors.NewChain(interceptors.WithTrust(trust))
	hs, err := remote.SyncHooks(ctx, b, env.chain, trust)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hs.Stop)
	env.hs = hs
	return env
}

func (env *syncEnv) synced(t *testing.T) {
	t.Helper()
	if err := env.hs.Synced(testCtx(t)); err != nil {
		t.Fatalf("Synced: %v", err)
	}
}

// plugins lists the chain's plugins on stage, in run order.
func (env *syncEnv) plugins(stage events.Stage) []string {
	var out []string
	for _, r := range env.chain.Registrations(stage) {
		out = append(out, r.Plugin)
	}
	return out
}

func mustPut(t *testing.T, reg *remote.Registry, r interceptors.Registration) {
	t.Helper()
	if err := reg.Put(testCtx(t), r); err != nil {
		t.Fatalf("Put(%s on %s): %v", r.Plugin, r.Stage, err)
	}
}

func TestSyncHooksAppliesChanges(t *testing.T) {
	env := newSyncEnv(t, func(reg *remote.Registry) {
		mustPut(t, reg, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Order: 5, Tools: "bash"})
	})
	// The initial load is applied when SyncHooks returns.
	regs := env.chain.Registrations(events.StageToolBefore)
	if len(regs) != 1 || regs[0].Plugin != "guard" || !regs[0].Remote || regs[0].Tools != "bash" || regs[0].Order != 5 {
		t.Fatalf("registrations %+v, want the remote guard", regs)
	}
	if !env.chain.Has(events.StageToolBefore, "bash", "a") || env.chain.Has(events.StageToolBefore, "ls", "a") {
		t.Fatal("Has does not follow the registration's matcher")
	}

	// The chain calls the served plugin.
	t.Run("calls", func(t *testing.T) {
		svc, err := remote.Serve(context.Background(), env.b.Conn(), remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}},
			interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
				return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no shell"}, nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Stop()
		ev := testEvent(t, "a", "s", events.NewID(), events.StageToolBefore, 1)
		ev.Subject = "bash"
		out, err := env.chain.Run(testCtx(t), ev)
		if err != nil || out.Decision != interceptors.Deny || out.Reason != "no shell" || !out.Records[0].Remote {
			t.Fatalf("Run: %+v (%v), want the remote deny", out, err)
		}
	})

	// Added live.
	mustPut(t, env.reg, interceptors.Registration{Plugin: "early", Stage: events.StageToolBefore, Order: 1})
	mustPut(t, env.reg, interceptors.Registration{Plugin: "gate", Stage: events.StageIntake})
	env.synced(t)
	if got := env.plugins(events.StageToolBefore); !slices.Equal(got, []string{"early", "guard"}) {
		t.Fatalf("tool.before: %v, want [early guard]", got)
	}
	if !env.chain.Has(events.StageIntake, "", "a") {
		t.Fatal("intake registration not applied")
	}

	// Updated live: guard moves first.
	mustPut(t, env.reg, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Order: -1, Policy: interceptors.PolicyFail})
	env.synced(t)
	regs = env.chain.Registrations(events.StageToolBefore)
	if len(regs) != 2 || regs[0].Plugin != "guard" || regs[0].Policy != interceptors.PolicyFail || regs[0].Tools != "" {
		t.Fatalf("after update: %+v, want guard first with policy fail and no matcher", regs)
	}

	// Deleted live.
	if err := env.reg.Delete(testCtx(t), events.StageToolBefore, "guard"); err != nil {
		t.Fatal(err)
	}
	env.synced(t)
	if got := env.plugins(events.StageToolBefore); !slices.Equal(got, []string{"early"}) {
		t.Fatalf("after delete: %v, want [early]", got)
	}

	// Stop removes what the sync registered.
	env.hs.Stop()
	env.hs.Stop() // idempotent
	<-env.hs.Done()
	if env.chain.Has(events.StageToolBefore, "x", "a") || env.chain.Has(events.StageIntake, "", "a") {
		t.Fatal("registrations left in the chain after Stop")
	}
	if err := env.hs.Synced(testCtx(t)); !errors.Is(err, remote.ErrRegistry) {
		t.Fatalf("Synced after Stop: %v, want ErrRegistry", err)
	}
}

// TestSyncHooksTrust: a revoked grant unregisters the plugin's privileged
// registrations, a new grant registers them again.
func TestSyncHooksTrust(t *testing.T) {
	env := newSyncEnv(t, func(reg *remote.Registry) {
		ctx := testCtx(t)
		if err := reg.Grant(ctx, "rewriter"); err != nil {
			t.Fatal(err)
		}
		mustPut(t, reg, interceptors.Registration{Plugin: "rewriter", Stage: events.StageContextAssembled})
		mustPut(t, reg, interceptors.Registration{Plugin: "rewriter", Stage: events.StageToolAfter})
	})
	has := func() bool { return env.chain.Has(events.StageContextAssembled, "", "a") }
	if !has() {
		t.Fatal("granted privileged registration not loaded")
	}
	ctx := testCtx(t)
	if err := env.reg.Revoke(ctx, "rewriter"); err != nil {
		t.Fatal(err)
	}
	env.synced(t)
	if has() {
		t.Fatal("privileged registration still in the chain after Revoke")
	}
	if !env.chain.Has(events.StageToolAfter, "read", "a") {
		t.Fatal("Revoke removed an unprivileged registration")
	}
	if _, err := env.reg.Get(ctx, events.StageContextAssembled, "rewriter"); err != nil {
		t.Fatalf("the registry entry went with the grant: %v", err)
	}
	if err := env.reg.Grant(ctx, "rewriter"); err != nil {
		t.Fatal(err)
	}
	env.synced(t)
	if !has() {
		t.Fatal("privileged registration not back after Grant")
	}
}

// TestSyncHooksSkipsBadEntries: entries that are malformed, lack a grant,
// claim builtin or clash with an in-process interceptor are skipped with a
// warning; the others apply and the sync goes on.
func TestSyncHooksSkipsBadEntries(t *testing.T) {
	env := newSyncEnv(t, nil)
	if _, err := env.chain.Register(interceptors.Registration{Plugin: "local", Stage: events.StageIntake},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil })); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	kv, err := env.b.JetStream().KeyValue(ctx, env.b.Names().Hooks)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct{ key, value string }{
		{"intake.garbage", `not json`},
		{"intake.mismatch", `{"plugin":"other","stage":"intake"}`},
		{"context.assembled.sneaky", `{"plugin":"sneaky","stage":"context.assembled","builtin":true}`},
		{"intake.local", `{"plugin":"local","stage":"intake"}`},
		{"tool.before.slow", `{"plugin":"slow","stage":"tool.before","timeout":"1m"}`},
		{"intake.good", `{"plugin":"good","stage":"intake","order":1}`},
	} {
		if _, err := kv.Put(ctx, e.key, []byte(e.value)); err != nil {
			t.Fatal(err)
		}
	}
	env.synced(t)
	if got := env.plugins(events.StageIntake); !slices.Equal(got, []string{"local", "good"}) {
		t.Fatalf("intake: %v, want the in-process local and the good entry", got)
	}
	if regs := env.chain.Registrations(events.StageIntake); regs[0].Remote {
		t.Fatal("the in-process interceptor was replaced by the registry's")
	}
	if env.chain.Has(events.StageContextAssembled, "", "a") || env.chain.Has(events.StageToolBefore, "x", "a") {
		t.Fatal("a refused entry is in the chain")
	}
	log := env.log.String()
	for _, want := range []string{"intake.garbage", "intake.mismatch", "lacks privileged_hooks permission", "intake.local", "already registered", "exceeds the 30s cap"} {
		if !strings.Contains(log, want) {
			t.Errorf("log does not mention %q:\n%s", want, log)
		}
	}
	// Still following.
	mustPut(t, env.reg, interceptors.Registration{Plugin: "later", Stage: events.StageIntake, Order: 2})
	env.synced(t)
	if got := env.plugins(events.StageIntake); !slices.Equal(got, []string{"local", "good", "later"}) {
		t.Fatalf("intake: %v, want later added", got)
	}
}

func TestSyncHooksValidates(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	trust, err := remote.WatchTrust(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer trust.Stop()
	if _, err := remote.SyncHooks(ctx, b, nil, trust); !errors.Is(err, bus.ErrInvalidOption) {
		t.Fatalf("nil chain: %v", err)
	}
	if _, err := remote.SyncHooks(ctx, b, interceptors.NewChain(), nil); !errors.Is(err, bus.ErrInvalidOption) {
		t.Fatalf("nil trust: %v", err)
	}
}

// TestSyncHooksConnectionClosed: when the sync's connection closes, the
// chain keeps its registrations (a fail-closed one goes on failing closed)
// until Stop.
func TestSyncHooksConnectionClosed(t *testing.T) {
	srv, nc := bustest.Start(t)
	bustest.Provision(t, nc)
	own := bustest.Conn(t, srv)
	b, err := bus.New(own)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	mustPut(t, remote.NewRegistry(b), interceptors.Registration{Plugin: "policy", Stage: events.StageToolBefore, Policy: interceptors.PolicyFail})
	trust, err := remote.WatchTrust(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer trust.Stop()
	chain := interceptors.NewChain(interceptors.WithTrust(trust))
	hs, err := remote.SyncHooks(ctx, b, chain, trust)
	if err != nil {
		t.Fatal(err)
	}
	own.Close()
	select {
	case <-hs.Done():
	case <-ctx.Done():
		t.Fatal("the sync did not notice its connection closed")
	}
	if !chain.Has(events.StageToolBefore, "bash", "a") {
		t.Fatal("the registrations went with the connection")
	}
	out, err := chain.Run(ctx, toolBefore(t))
	if err != nil || out.Decision != interceptors.Deny || out.Records[0].Failure == nil {
		t.Fatalf("Run: %+v (%v), want the fail-closed registration to deny", out, err)
	}
	hs.Stop()
	if chain.Has(events.StageToolBefore, "bash", "a") {
		t.Fatal("Stop left the registrations")
	}
}
