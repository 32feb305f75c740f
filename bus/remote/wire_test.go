package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
)

// wireEvent is the fixed event of TestRequestOnTheWire.
func wireEvent(t *testing.T) *events.Event {
	t.Helper()
	ev, err := events.New(events.StageToolBefore, events.Meta{
		Source: "hookbus/loop", AgentID: "support", SessionID: "s1", RunID: "r1", Step: 2, Seq: 7, Subject: "search",
	}, events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "search", Arguments: json.RawMessage(`{"q":"x"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	ev.ID = "01J00000000000000000000ABC"
	ev.Time = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	ev.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	return ev
}

// wireHeaders are the headers of wireEvent's request (docs/PROTOCOL.md,
// "Interception") with the deadline wireDeadline, but Hookbus-Timeout-Ms,
// the budget left when it was sent.
var wireHeaders = map[string][]string{
	"ce-specversion":   {"1.0"},
	"ce-id":            {"01J00000000000000000000ABC"},
	"ce-type":          {"hookbus.tool.before"},
	"ce-source":        {"hookbus/loop"},
	"ce-time":          {"2026-01-02T03:04:05.000006Z"},
	"ce-subject":       {"search"},
	"content-type":     {"application/json"},
	"ce-agentid":       {"support"},
	"ce-sessionid":     {"s1"},
	"ce-runid":         {"r1"},
	"ce-step":          {"2"},
	"ce-seq":           {"000000000007"},
	"ce-traceparent":   {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	"Hookbus-Deadline": {"2099-01-02T03:04:05.123456789Z"},
	"traceparent":      {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
}

const wireBody = `{"call":{"id":"c1","name":"search","arguments":{"q":"x"}}}`

// The request of a fixed event is the same on the wire for a single call
// and for every call of a chain, the later calls too (which reuse the
// run's encoding): the event's headers and body, the deadline headers of
// the call, nothing left over from another call.
func TestRequestOnTheWire(t *testing.T) {
	env := newRemoteEnv(t)
	deadline := time.Date(2099, 1, 2, 3, 4, 5, 123456789, time.UTC)
	got := make(chan *nats.Msg, 16)
	plugins := []string{"w-a", "w-b", "w-c"}
	for _, p := range plugins {
		subj, err := env.client.Subjects().Hook(events.StageToolBefore, p)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := env.svcNC.Subscribe(subj, func(m *nats.Msg) {
			got <- m
			_ = m.Respond(nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := env.svcNC.Flush(); err != nil {
		t.Fatal(err)
	}
	// check compares m with the pinned request; a call of the chain has a
	// deadline of its own (its registration's timeout), read not compared.
	check := func(what string, m *nats.Msg, ownDeadline bool) {
		t.Helper()
		h := maps.Clone(map[string][]string(m.Header))
		if ownDeadline {
			d := nats.Header(h).Get(remote.HeaderDeadline)
			if _, err := time.Parse(time.RFC3339Nano, d); err != nil || len(h[remote.HeaderDeadline]) != 1 {
				t.Errorf("%s: %s %q: %v", what, remote.HeaderDeadline, d, err)
			}
			h[remote.HeaderDeadline] = wireHeaders[remote.HeaderDeadline]
		}
		ms, err := strconv.Atoi(nats.Header(h).Get(remote.HeaderTimeoutMs))
		if err != nil || ms <= 0 {
			t.Errorf("%s: %s %q, want a budget in ms", what, remote.HeaderTimeoutMs, nats.Header(h).Get(remote.HeaderTimeoutMs))
		}
		delete(h, remote.HeaderTimeoutMs)
		if fmt.Sprint(h) != fmt.Sprint(wireHeaders) {
			t.Errorf("%s: headers\n got %v\nwant %v", what, h, wireHeaders)
		}
		if string(m.Data) != wireBody {
			t.Errorf("%s: body %s, want %s", what, m.Data, wireBody)
		}
	}

	ev := wireEvent(t)
	r := env.remote(t, interceptors.Registration{Plugin: plugins[0], Stage: events.StageToolBefore})
	if _, err := r.Intercept(context.Background(), &interceptors.Request{Stage: events.StageToolBefore, Event: ev, Deadline: deadline}); err != nil {
		t.Fatal(err)
	}
	check("one call", <-got, false)

	// Mutating calls one after another; validating calls at once, so that
	// some encode the request anew while another holds the run's.
	for _, modes := range [][]interceptors.Mode{
		{interceptors.ModeMutate, interceptors.ModeMutate, interceptors.ModeValidate},
		{interceptors.ModeValidate, interceptors.ModeValidate, interceptors.ModeValidate},
	} {
		chain := interceptors.NewChain()
		for i, p := range plugins {
			reg := interceptors.Registration{Plugin: p, Stage: events.StageToolBefore, Mode: modes[i]}
			if _, err := chain.Register(env.remote(t, reg).Registration(), env.remote(t, reg)); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		for run := range 3 {
			out, err := chain.Run(ctx, ev)
			if err != nil || out.Decision != interceptors.Allow || len(out.Records) != 3 {
				t.Fatalf("%v, run %d: %+v, %v", modes, run, out, err)
			}
			for range plugins {
				m := <-got
				check(fmt.Sprintf("%v, run %d, call on %s", modes, run, m.Subject), m, true)
			}
		}
	}
}
