package natsconf_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
)

// These tests run hookbus' own transport (package bus) under the
// configured users, so a change in what bus asks of the server shows up
// here as a permission error rather than in production.

// TestBusServeUnderPluginUsers: remote.Serve (a micro service, queue group =
// plugin) works under the plugin's user for its own stages and answers the
// loop; asked to serve a privileged stage under an unprivileged user, the
// server refuses the subscription and the loop finds no responder.
func TestBusServeUnderPluginUsers(t *testing.T) {
	f := startSingle(t)
	pii, errs := f.connect(t, "plugin-pii")
	loop, _ := f.connect(t, "loop")
	ctx := testContext(t)
	allow := interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		return nil, nil // allow
	})

	svc, err := remote.Serve(ctx, pii, remote.ServeConfig{
		Plugin: "plugin-pii", Stages: []events.Stage{events.StageToolBefore, events.StageStop},
	}, allow)
	if err != nil {
		t.Fatalf("serve plugin-pii: %v", err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	discoveryRefused(t, errs)
	for _, subj := range []string{"hookbus.hook.tool.before.plugin-pii", "hookbus.hook.stop.plugin-pii"} {
		if _, err := loop.Request(subj, nil, wait); err != nil {
			t.Fatalf("request %s: %v", subj, err)
		}
	}

	priv, err := remote.Serve(ctx, pii, remote.ServeConfig{
		Plugin: "plugin-pii", Stages: []events.Stage{events.StageContextAssembled},
	}, allow)
	if err == nil {
		_ = priv.Stop()
		t.Fatal("remote.Serve on a stage the user may not subscribe to returned no error")
	}
	if !errors.Is(err, bus.ErrPermission) || !strings.Contains(err.Error(), "hookbus.hook.context.assembled.plugin-pii") {
		t.Fatalf("remote.Serve on a refused stage = %v, want ErrPermission naming the subject", err)
	}
	errs.wantViolation(t, "Subscription to", "hookbus.hook.context.assembled.plugin-pii")
	if _, err := loop.Request("hookbus.hook.context.assembled.plugin-pii", nil, wait); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("request to the refused stage: %v, want no responders", err)
	}
}

// TestBusReadsUnderLoopAndAuditor: events the loop publishes with the bus
// are read back by the loop (SessionEvents, the session rebuild) and by the
// auditor (Replay, which deletes its ordered consumer when done), with no
// permission error on either connection.
func TestBusReadsUnderLoopAndAuditor(t *testing.T) {
	f := startSingle(t)
	loop, _ := f.connect(t, "loop")
	auditor, _ := f.connect(t, "auditor")
	ctx := testContext(t)

	lb, err := bus.New(loop)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, stage := range []events.Stage{events.StageIntake, events.StageRunStarted, events.StageRunCompleted} {
		e, err := events.New(stage, events.Meta{
			Source: "natsconf-test", AgentID: "agent1", SessionID: "session1", RunID: "run1",
		}, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if err := lb.Publish(ctx, e); err != nil {
			t.Fatalf("publish %s as loop: %v", stage, err)
		}
		ids = append(ids, e.ID)
	}
	if err := lb.Flush(ctx, "run1"); err != nil {
		t.Fatalf("flush as loop: %v", err)
	}
	session, err := lb.SessionEvents(ctx, "agent1", "session1")
	if err != nil || len(session) != len(ids) {
		t.Fatalf("session events as loop: %d, %v; want %d", len(session), err, len(ids))
	}
	noErrors(t, loop)

	ab, err := bus.New(auditor, bus.WithDefaultTimeout(wait))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	start := time.Now()
	st, err := ab.Replay(ctx, bus.Filter{Agent: "agent1", Session: "session1"}, func(e *events.Event) error {
		got = append(got, e.ID)
		return nil
	})
	if err != nil || st.Events != len(ids) {
		t.Fatalf("replay as auditor: %+v, %v", st, err)
	}
	for i := range ids {
		if got[i] != ids[i] {
			t.Fatalf("replay order: %v, want %v", got, ids)
		}
	}
	// A refused consumer delete would have cost the whole default timeout.
	if d := time.Since(start); d >= wait {
		t.Fatalf("replay took %v", d)
	}
	noErrors(t, auditor)
}
