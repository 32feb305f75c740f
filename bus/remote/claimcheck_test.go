package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
)

// The claim check of interception requests: an event larger than the
// server's max_payload (1 MiB by default) travels as a small request with a
// dataref; Serve fetches its data from the payloads store before the
// interceptor runs (see bus' claim check tests for events).

const bigSize = 5 << 20 // a 5 MiB tool result

// ref is the dataref hookbus gives e's data.
func ref(b *bus.Bus, e *events.Event) string {
	return b.Names().Payloads + "/" + bus.ObjectName(e.ID, e.Data)
}

// A remote interceptor on tool.after receives a 5 MiB result through a
// small request (the data claim-checked) and modifies it with a patch; a
// decision that sends the whole 5 MiB back cannot be a reply and fails
// with an error that says to patch.
func TestClaimCheckRemoteInterceptor(t *testing.T) {
	env := newRemoteEnv(t)
	if err := env.client.Provision(bigCtx(t)); err != nil {
		t.Fatal(err)
	}
	ev := sizedEvent(t, "agent-1", "s1", events.NewID(), 1, bigSize)

	// A spy on the subject sees what travels.
	spied := make(chan *nats.Msg, 4)
	spy, err := env.svcNC.Subscribe("hookbus.hook.tool.after.>", func(m *nats.Msg) { spied <- m })
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Unsubscribe()

	var seen sync.Map // plugin -> *events.Event it received
	env.serve(t, "redact", events.StageToolAfter, func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		seen.Store("redact", req.Event)
		return &interceptors.Decision{Kind: interceptors.Modify, Patch: []interceptors.PatchOp{
			{Op: "replace", Path: "/result/name", Value: json.RawMessage(`"redacted"`)},
		}, Context: "checked 5 MiB"}, nil
	})
	env.serve(t, "rewrite", events.StageToolAfter, func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		seen.Store("rewrite", req.Event)
		return &interceptors.Decision{Kind: interceptors.Modify, Data: req.Event.Data}, nil
	})

	chain := interceptors.NewChain()
	for i, plugin := range []string{"redact", "rewrite"} {
		if _, err := remote.Register(env.client, chain, interceptors.Registration{
			Plugin: plugin, Stage: events.StageToolAfter, Order: i, Timeout: 20 * time.Second,
		}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	out, err := chain.Run(bigCtx(t), ev)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("two remote calls on a %d MiB tool.after: %v", bigSize>>20, time.Since(start))

	got, _ := seen.Load("redact")
	req, _ := got.(*events.Event)
	if req == nil || !bytes.Equal(req.Data, ev.Data) || req.DataRef != ref(env.client, ev) {
		t.Fatalf("the interceptor did not get the 5 MiB data: %v", req)
	}
	for i := 0; i < 2; i++ {
		select {
		case m := <-spied:
			if len(m.Data) != 0 || m.Header.Get("ce-dataref") == "" {
				t.Errorf("request %d on %s: %d bytes of body, dataref %q", i, m.Subject, len(m.Data), m.Header.Get("ce-dataref"))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the spy saw %d requests, want 2", i)
		}
	}

	if out.Decision != interceptors.Modify || len(out.Records) != 2 {
		t.Fatalf("outcome %s with %d records", out.Decision, len(out.Records))
	}
	var p events.ToolAfter
	if err := json.Unmarshal(out.Data, &p); err != nil {
		t.Fatal(err)
	}
	if p.Result.Name != "redacted" || len(p.Result.Content) != bigSize {
		t.Errorf("patched payload: name %q, %d bytes of content", p.Result.Name, len(p.Result.Content))
	}
	if len(out.Context) != 1 || out.Context[0] != "checked 5 MiB" {
		t.Errorf("context %q", out.Context)
	}
	// The second plugin got the patched data (another object: never
	// overwritten) and answered with all of it: too large for a reply.
	got, _ = seen.Load("rewrite")
	if req, _ := got.(*events.Event); req == nil || !strings.Contains(req.DataRef, bus.ObjectName(ev.ID, out.Data)) {
		t.Errorf("rewrite got %v, want the patched data's object", got)
	}
	f := out.Records[1].Failure
	if f == nil || f.Kind != events.FailError || !strings.Contains(f.Err.Error(), "patch") {
		t.Errorf("whole-data reply: failure %+v, want an error saying to patch", f)
	}
}

// A request whose dataref names no object is answered with error 400, and
// the interceptor is not called.
func TestClaimCheckServeMissingObject(t *testing.T) {
	env := newRemoteEnv(t)
	if err := env.client.Provision(bigCtx(t)); err != nil {
		t.Fatal(err)
	}
	called := make(chan struct{}, 1)
	env.serve(t, "p", events.StageToolAfter, func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		called <- struct{}{}
		return nil, nil
	})
	ev := testEvent(t, "agent-1", "s1", events.NewID(), events.StageToolAfter, 1)
	ev.Data, ev.DataRef = nil, env.client.Names().Payloads+"/evt/"+ev.ID+"/none"
	r := env.remote(t, interceptors.Registration{Plugin: "p", Stage: events.StageToolAfter})
	_, err := call(r, ev, 5*time.Second)
	var se *remote.ErrorReply
	if !errors.As(err, &se) || se.Code != "400" || !strings.Contains(se.Description, ev.DataRef) {
		t.Fatalf("Intercept: %v, want error 400 naming %s", err, ev.DataRef)
	}
	select {
	case <-called:
		t.Fatal("the interceptor was called without its data")
	default:
	}
}

// bigCtx bounds a test that moves several MiB through the object store:
// under the race detector on a busy machine that takes far longer than the
// small events' 30 s, and the bound only says when to give up.
func bigCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
