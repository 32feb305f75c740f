package loop_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
)

// worker is a loop worker on b: an engine whose chain follows the registry,
// taking runs from the queue, as loop serve runs one.
func startWorker(t *testing.T, b *bus.Bus, cfg loop.Config) *interceptors.Chain {
	t.Helper()
	ctx := ctxT(t)
	trust, err := remote.WatchTrust(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(trust.Stop)
	chain := interceptors.NewChain(interceptors.WithTrust(trust))
	hs, err := remote.SyncHooks(ctx, b, chain, trust)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hs.Stop)
	cfg.Hooks = chain
	eng := newEngine(t, b, cfg)
	rc, err := runs.New(b).Consume(context.Background(), runs.ConsumerConfig{Agents: runs.Agents("a"), Concurrency: 4}, func(ctx context.Context, req *events.RunRequest) (runs.Outcome, error) {
		return runs.Outcome{}, loop.NewWorker(eng, nil).Handle(ctx, req)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Stop() })
	return chain
}

// submitWait queues a run and returns its events once it ended.
func submitWait(t *testing.T, b *bus.Bus, agent, id string) []*events.Event {
	t.Helper()
	ctx := ctxT(t)
	if err := runs.New(b).Submit(ctx, &events.RunRequest{RunID: id, AgentID: agent, SessionID: id, Prompt: "go"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitRun(ctx, agent, id, id); err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	var out []*events.Event
	if _, err := b.Replay(ctx, bus.Filter{Agent: agent, Session: id}, func(e *events.Event) error {
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// decidedBy returns the hook.decided payloads of plugin among evs.
func decidedBy(t *testing.T, evs []*events.Event, plugin string) []events.HookDecided {
	t.Helper()
	var out []events.HookDecided
	for _, e := range evs {
		if e.Stage != events.StageHookDecided {
			continue
		}
		var p events.HookDecided
		if err := e.DecodeData(&p); err != nil {
			t.Fatal(err)
		}
		if p.Plugin == plugin {
			out = append(out, p)
		}
	}
	return out
}

// The kill switch on a running worker: once the plugin is disabled in the
// registry, the worker stops calling it without a restart, and each call it
// skips is recorded, naming who disabled it; enabled again, it is called
// again.
func TestKillSwitchOnRunningWorker(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := ctxT(t)
	var calls atomic.Int32
	svc, err := remote.Serve(ctx, b.Conn(), remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			calls.Add(1)
			return nil, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	reg := remote.NewRegistry(b)
	if err := reg.Put(ctx, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore}); err != nil {
		t.Fatal(err)
	}
	chain := startWorker(t, b, loop.Config{})

	evs := submitWait(t, b, "a", "before")
	if d := decidedBy(t, evs, "guard"); len(d) != 2 || d[0].Decision != "allow" || calls.Load() != 2 {
		t.Fatalf("before the kill switch: %d calls, decisions %+v", calls.Load(), d)
	}

	at := time.Now()
	if err := reg.Disable(ctx, "guard", interceptors.Disabled{By: "alice", Reason: "misbehaving"}); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { _, ok := chain.DisabledPlugins()["guard"]; return ok },
		"the running worker to see guard disabled")
	t.Logf("kill switch applied on the worker %v after Disable", time.Since(at))

	n := calls.Load()
	evs = submitWait(t, b, "a", "during")
	d := decidedBy(t, evs, "guard")
	if calls.Load() != n || len(d) != 2 {
		t.Fatalf("disabled guard: %d more calls, records %+v", calls.Load()-n, d)
	}
	for _, p := range d {
		if p.Decision != string(interceptors.Skipped) || p.Annotations[interceptors.AnnotationDisabledBy] != events.IdentityAnonymous ||
			p.Annotations[interceptors.AnnotationDisabledReason] != "misbehaving" || p.EventID == "" {
			t.Fatalf("skipped record: %+v", p)
		}
	}
	last := evs[len(evs)-1]
	var rc events.RunCompleted
	if err := last.DecodeData(&rc); err != nil || rc.Reason != events.ReasonDone {
		t.Fatalf("run with guard disabled: %s %+v %v", last.Stage, rc, err)
	}
	// The entry says who disabled it as the server knows the connection
	// (anonymous: the embedded server does not authenticate), and keeps the
	// name given as a note.
	if got, err := reg.DisabledPlugins(ctx); err != nil || got["guard"].By != events.IdentityAnonymous || got["guard"].DeclaredBy != "alice" {
		t.Fatalf("DisabledPlugins: %v %v", got, err)
	}

	if err := reg.Enable(ctx, "guard", events.Actor{Channel: events.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return len(chain.DisabledPlugins()) == 0 },
		"the running worker to see guard enabled")
	n = calls.Load()
	evs = submitWait(t, b, "a", "after")
	if d := decidedBy(t, evs, "guard"); calls.Load() != n+2 || len(d) != 2 || d[0].Decision != "allow" {
		t.Fatalf("enabled again: %d calls, records %+v", calls.Load()-n, d)
	}
	if err := reg.Enable(ctx, "guard", events.Actor{}); err == nil {
		t.Fatal("enabling a plugin that is not disabled: no error")
	}
}
