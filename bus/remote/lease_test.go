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

func allowAll() interceptors.Interceptor {
	return interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil })
}

// entryOf returns the registry entry of plugin on stage.
func entryOf(t *testing.T, reg *remote.Registry, stage events.Stage, plugin string) (remote.Entry, bool) {
	t.Helper()
	all, err := reg.Entries(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(all, func(e remote.Entry) bool { return e.Stage == stage && e.Plugin == plugin })
	if i < 0 {
		return remote.Entry{}, false
	}
	return all[i], true
}

// TestServeRegisterLease: a plugin served with Register is called while it
// lives; stopped cleanly, its registration is removed; when its process
// dies without a word (its connection gone), loops stop calling it within
// the lease's TTL, it lists as gone and Prune removes it; a registration
// without a lease stays.
func TestServeRegisterLease(t *testing.T) {
	log := &bustest.Buffer{}
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc, bus.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	env := &syncEnv{b: b, reg: remote.NewRegistry(b), log: log}
	mustPut(t, env.reg, interceptors.Registration{Plugin: "coded", Stage: events.StageToolBefore})
	trust, err := remote.WatchTrust(testCtx(t), b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(trust.Stop)
	env.chain = interceptors.NewChain(interceptors.WithTrust(trust))
	if env.hs, err = remote.SyncHooks(testCtx(t), b, env.chain, trust); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.hs.Stop)
	cfg := remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore},
		Register: []interceptors.Registration{{Stage: events.StageToolBefore, Tools: "bash"}}}

	// Served and registered.
	svc, err := remote.Serve(testCtx(t), env.b.Conn(), cfg, allowAll())
	if err != nil {
		t.Fatal(err)
	}
	env.synced(t)
	if got := env.plugins(events.StageToolBefore); !slices.Equal(got, []string{"coded", "guard"}) {
		t.Fatalf("tool.before: %v, want [coded guard]", got)
	}
	if e, ok := entryOf(t, env.reg, events.StageToolBefore, "guard"); !ok || !e.Leased || e.Gone || len(e.Instances) != 1 {
		t.Fatalf("entry %+v (%v), want leased, held by one instance", e, ok)
	}
	if e, _ := entryOf(t, env.reg, events.StageToolBefore, "coded"); e.Leased || e.Gone {
		t.Fatalf("coded entry %+v, want no lease", e)
	}

	// Stopped cleanly: unregistered.
	if err := svc.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, ok := entryOf(t, env.reg, events.StageToolBefore, "guard"); ok {
		t.Fatal("registration left after a clean stop")
	}
	env.synced(t)
	if got := env.plugins(events.StageToolBefore); !slices.Equal(got, []string{"coded"}) {
		t.Fatalf("tool.before after stop: %v, want [coded]", got)
	}

	// Two instances: one stopping leaves the registration to the other.
	nc1, nc2 := bustest.Conn(t, srv), bustest.Conn(t, srv)
	_, err = remote.Serve(testCtx(t), nc1, cfg, allowAll())
	if err != nil {
		t.Fatal(err)
	}
	two, err := remote.Serve(testCtx(t), nc2, cfg, allowAll())
	if err != nil {
		t.Fatal(err)
	}
	if err := two.Stop(); err != nil {
		t.Fatal(err)
	}
	if e, ok := entryOf(t, env.reg, events.StageToolBefore, "guard"); !ok || e.Gone {
		t.Fatalf("entry %+v (%v) after one of two instances stopped, want held", e, ok)
	}

	// The last instance dies without a word: its lease lapses.
	nc1.Close()
	bustest.Eventuallyf(t, 3*bus.LeaseTTL, func() bool {
		return !slices.Contains(env.plugins(events.StageToolBefore), "guard")
	}, "the chain still calls guard after its lease lapsed")
	if !strings.Contains(env.log.String(), "plugin gone") {
		t.Fatalf("no log of the plugin gone:\n%s", env.log.String())
	}
	e, ok := entryOf(t, env.reg, events.StageToolBefore, "guard")
	if !ok || !e.Leased || !e.Gone {
		t.Fatalf("entry %+v (%v), want leased and gone", e, ok)
	}
	pruned, err := env.reg.Prune(testCtx(t))
	if err != nil || len(pruned) != 1 || pruned[0].Plugin != "guard" {
		t.Fatalf("Prune: %+v, %v; want guard", pruned, err)
	}
	if _, err := env.reg.Get(testCtx(t), events.StageToolBefore, "guard"); !errors.Is(err, remote.ErrNotFound) {
		t.Fatalf("Get after Prune: %v, want ErrNotFound", err)
	}
	if _, err := env.reg.Get(testCtx(t), events.StageToolBefore, "coded"); err != nil {
		t.Fatalf("the registration without a lease: %v", err)
	}
}

// TestServeRegisterValidates: Register names the served plugin's stages.
func TestServeRegisterValidates(t *testing.T) {
	b := bustest.StartBus(t)
	_, err := remote.Serve(testCtx(t), b.Conn(), remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore},
		Register: []interceptors.Registration{{Stage: events.StageIntake}}}, allowAll())
	if !errors.Is(err, remote.ErrInvalidOption) || !strings.Contains(err.Error(), "not served") {
		t.Fatalf("Serve: %v, want ErrInvalidOption naming the stage not served", err)
	}
}
