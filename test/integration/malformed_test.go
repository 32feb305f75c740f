package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// Messages on the event subjects that are not hookbus events, and requests
// on the interceptor subjects that are not interception requests: readers
// skip and count them, services answer them with an error naming the
// problem, and nobody stops.

// sampleEvent is a valid event of agent/session, encoded in binary mode.
func sampleEncoded(t *testing.T, agent, session string) (events.Header, []byte) {
	t.Helper()
	e, err := events.New(events.StageStepStarted, events.Meta{
		Source: "hookbus/test", AgentID: agent, SessionID: session, RunID: "foreign-run", Step: 1, Seq: 1,
	}, events.StepStarted{Step: 1})
	if err != nil {
		t.Fatal(err)
	}
	h, body, err := events.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	return h, body
}

// with returns a copy of h with key set to v (deleted when v is empty),
// without h's Nats-Msg-Id: JetStream would store only the first of several
// messages made from one event.
func headerWith(h events.Header, key, v string) nats.Header {
	out := nats.Header{}
	for k, vs := range h {
		out[k] = append([]string(nil), vs...)
	}
	delete(out, events.HeaderMsgID)
	if v == "" {
		delete(out, key)
	} else {
		out[key] = []string{v}
	}
	return out
}

// Malformed and foreign messages published on a session's event subjects
// while a real run writes to it: observer replay (--json and timeline)
// prints the real events and the one valid foreign event, skips and counts
// the rest, and exits 0; a durable observer counts them as malformed and
// delivers every valid event; and the loop rebuilds the session from the
// same stream for a second run.
func TestMalformedEventsOnTheStream(t *testing.T) {
	f := startFaultBus(t)
	const agent, session = "m1", "s1"
	subj := func(stage string) string { return "hookbus.evt." + agent + "." + session + "." + stage }
	h, body := sampleEncoded(t, agent, session)

	// A valid hookbus event of another producer, in structured mode.
	foreign, err := events.New(events.StageHookDecided, events.Meta{
		Source: "https://example.com/auditor", AgentID: agent, SessionID: session, RunID: "foreign-run", Seq: 1,
	}, events.HookDecided{Plugin: "external", Stage: events.StageToolBefore, Decision: "allow"})
	if err != nil {
		t.Fatal(err)
	}
	structured, err := json.Marshal(foreign.CloudEvent())
	if err != nil {
		t.Fatal(err)
	}
	malformed := []*nats.Msg{
		{Subject: subj("tool.before"), Data: []byte("no headers at all")},
		{Subject: subj("run.started"), Header: headerWith(h, "ce-id", "not-a-ulid"), Data: body},
		{Subject: subj("step.started"), Header: headerWith(h, "ce-type", "com.example.x"), Data: body},
		{Subject: subj("stop"), Header: headerWith(h, "ce-specversion", "0.1"), Data: body},
		{Subject: subj("model.responded"), Header: headerWith(h, "ce-seq", "%zz"), Data: body},
		{Subject: subj("tool.after"), Header: headerWith(h, "", ""), Data: []byte(`{"call":`)},
		// A CloudEvent of another producer, valid as a CloudEvent, without
		// hookbus' extensions.
		{Subject: subj("run.completed"), Header: nats.Header{
			"ce-specversion": {"1.0"}, "ce-id": {"A234-1234-1234"}, "ce-type": {"com.example.order.created"},
			"ce-source": {"https://example.com/shop"}, "content-type": {"application/json"},
		}, Data: []byte(`{"order":1}`)},
		{Subject: subj("intake"), Header: nats.Header{"content-type": {"application/cloudevents+json"}}, Data: []byte(`{"specversion":"1.0","id":"x"}`)},
	}
	// A valid event whose data is not its stage's payload: a reader of the
	// stream gets it; the loop's rebuild must not choke on it. (Not a
	// run.started: a valid run.started claims the session, and the running
	// loop would rightly lose it — loop/fence_test.go tests that.)
	odd, err := events.New(events.StageModelResponded, events.Meta{
		Source: "https://example.com/other", AgentID: agent, SessionID: session, RunID: "foreign-run", Seq: 2,
	}, json.RawMessage(`{"message":5}`))
	if err != nil {
		t.Fatal(err)
	}
	oddH, oddBody, err := events.Encode(odd)
	if err != nil {
		t.Fatal(err)
	}
	valid := []*nats.Msg{
		{Subject: subj("hook.decided"), Header: nats.Header{"Content-Type": {"application/cloudevents+json"}}, Data: structured},
		{Subject: subj("model.responded"), Header: nats.Header(oddH), Data: oddBody},
	}
	pending := append(append([]*nats.Msg{}, malformed[:4]...), valid...)
	pending = append(pending, malformed[4:len(malformed)-1]...)
	last := malformed[len(malformed)-1] // published after the run: the session's last message

	// Interleave: each event the loop publishes sends the next foreign
	// message, so they land among the run's events.
	js := f.b.JetStream()
	var (
		mu   sync.Mutex
		sent int
		errs []error
	)
	publish := func(m *nats.Msg) {
		_, err := js.PublishMsg(context.Background(), m)
		mu.Lock()
		defer mu.Unlock()
		sent++
		if err != nil {
			errs = append(errs, fmt.Errorf("publish on %s: %w", m.Subject, err))
		}
	}
	next := 0
	sub, err := f.nc.Subscribe("hookbus.evt."+agent+"."+session+".>", func(m *nats.Msg) {
		if m.Header.Get(events.HeaderMsgID) == "" || next >= len(pending) {
			return // ours, or all sent
		}
		msg := pending[next]
		next++
		go publish(msg)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.nc.Flush(); err != nil {
		t.Fatal(err)
	}

	r := run(t, "loop", "run", "--nats", f.url, "--agent", agent, "--session", session, "what is 6*7?")
	if r.code != 0 || !strings.Contains(r.stdout, "6*7 = 42") {
		t.Fatalf("loop run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	firstRun := loopRunID(t, r)
	waitFor(t, 30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return sent == len(pending) },
		"the foreign messages to be published")
	_ = sub.Unsubscribe()
	publish(last)
	mu.Lock()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	mu.Unlock()
	nMalformed := len(malformed)

	// observer replay --json: the run's events whole, the foreign valid
	// event, nothing else; each skipped message is logged.
	rep := run(t, "observer", "replay", "--nats", f.url, "--agent", agent, "--session", session, "--json")
	if rep.code != 0 {
		t.Fatalf("observer replay --json: exit %d\n%s", rep.code, rep.stderr)
	}
	all := jsonEvents(t, rep.stdout)
	evs := wholeRun(t, all, firstRun)
	if len(all) != len(evs)+len(valid) || eventIndex(all, foreign.ID) < 0 || eventIndex(all, odd.ID) < 0 {
		t.Fatalf("replay --json gave %d events, want the run's %d and the %d valid foreign ones\n%s", len(all), len(evs), len(valid), seqStages(all))
	}
	if n := strings.Count(rep.stderr, "malformed event skipped"); n != nMalformed {
		t.Fatalf("replay --json logged %d skipped messages, want %d\n%s", n, nMalformed, rep.stderr)
	}
	// The timeline counts them.
	tl := run(t, "observer", "replay", "--nats", f.url, "--agent", agent, "--session", session)
	want := fmt.Sprintf("%d events, %d malformed messages skipped", len(all), nMalformed)
	if tl.code != 0 || !strings.Contains(tl.stderr, want) || !strings.Contains(tl.stdout, "6*7 = 42") {
		t.Fatalf("observer replay: exit %d, want %q on stderr\nstdout %s\nstderr %s", tl.code, want, tl.stdout, tl.stderr)
	}

	// A durable observer: every valid event delivered once, the rest counted.
	var (
		omu sync.Mutex
		got = map[string]int{}
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs, err := f.b.Observe(ctx, bus.ObserveConfig{Durable: "audit", Agent: agent}, func(_ context.Context, e *events.Event) error {
		omu.Lock()
		defer omu.Unlock()
		got[e.ID]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool {
		st := obs.Stats()
		return st.Malformed == uint64(nMalformed) && st.Acked == uint64(len(all))
	}, "the observer to handle %d events and skip %d messages; stats %+v", len(all), nMalformed, lazy(func() string { return fmt.Sprintf("%+v", obs.Stats()) }))
	obs.Stop()
	<-obs.Closed()
	omu.Lock()
	for _, e := range all {
		if got[e.ID] != 1 {
			t.Errorf("observer got event %s (%s) %d times", e.ID, e.Stage, got[e.ID])
		}
	}
	if len(got) != len(all) {
		t.Errorf("observer got %d distinct events, want %d", len(got), len(all))
	}
	omu.Unlock()

	// The loop rebuilds the session from the same stream.
	r2 := run(t, "loop", "run", "--nats", f.url, "--agent", agent, "--session", session, "and again?")
	if r2.code != 0 || !strings.Contains(r2.stdout, "(You asked: and again?)") {
		t.Fatalf("second run in the session: exit %d\nstdout %s\nstderr %s", r2.code, r2.stdout, r2.stderr)
	}
	all2 := f.replay(t, agent, session)
	evs2 := wholeRun(t, all2, loopRunID(t, r2))
	started := payloadsOf[events.RunStarted](t, evs2, events.StageRunStarted)
	// The first run's conversation: prompt, reply with two tool calls, two
	// tool results, answer.
	if len(started) != 1 || started[0].HistoryMessages != 5 {
		t.Fatalf("second run.started %+v, want 5 history messages", started)
	}
	if len(all2) != len(all)+len(evs2) {
		t.Fatalf("after the second run the session has %d events, want %d", len(all2), len(all)+len(evs2))
	}
}

func eventIndex(evs []*events.Event, id string) int {
	for i, e := range evs {
		if e.ID == id {
			return i
		}
	}
	return -1
}

// Requests on a served interceptor's subject that are not interception
// requests get a micro error reply naming the problem, never reach the
// interceptor, and do not stop the service: a valid request afterwards is
// answered, and $SRV.STATS counts the errors.
func TestMalformedRequestsToAServedInterceptor(t *testing.T) {
	f := startFaultBus(t)
	var calls int
	var mu sync.Mutex
	ic := interceptors.Func(func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no " + req.Event.Subject}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := remote.Serve(ctx, f.nc, remote.ServeConfig{Plugin: "strict", Stages: []events.Stage{events.StageToolBefore}}, ic)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Stop() }()
	subj, _ := f.b.Subjects().Hook(events.StageToolBefore, "strict")

	tb, err := events.New(events.StageToolBefore, events.Meta{Source: "hookbus/test", AgentID: "a", SessionID: "s", RunID: "r", Subject: "calculator"},
		events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "calculator"}})
	if err != nil {
		t.Fatal(err)
	}
	h, body, err := events.Encode(tb)
	if err != nil {
		t.Fatal(err)
	}
	stepH, stepBody := sampleEncoded(t, "a", "s")
	future := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	cases := []struct {
		name string
		msg  *nats.Msg
		code string
		says string
	}{
		{"no headers", &nats.Msg{Data: []byte("hello")}, "400", "no ce-specversion"},
		{"garbage body", &nats.Msg{Header: headerWith(h, remote.HeaderDeadline, future), Data: []byte("{not json")}, "400", "JSON"},
		{"bad ce-id", &nats.Msg{Header: headerWith(h, "ce-id", "123"), Data: body}, "400", "ULID"},
		{"wrong stage", &nats.Msg{Header: nats.Header(stepH), Data: stepBody}, "400", "a step.started event sent to the tool.before endpoint"},
		{"bad deadline", &nats.Msg{Header: headerWith(h, remote.HeaderDeadline, "tomorrow"), Data: body}, "400", remote.HeaderDeadline},
		{"bad timeout", &nats.Msg{Header: headerWith(h, remote.HeaderTimeoutMs, "-5"), Data: body}, "400", remote.HeaderTimeoutMs},
		{"deadline passed", &nats.Msg{Header: headerWith(h, remote.HeaderDeadline, "2001-01-01T00:00:00Z"), Data: body}, "504", "deadline"},
	}
	for _, tc := range cases {
		tc.msg.Subject = subj
		reply, err := f.nc.RequestMsg(tc.msg, 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		code, desc := reply.Header.Get(micro.ErrorCodeHeader), reply.Header.Get(micro.ErrorHeader)
		if code != tc.code || !strings.Contains(desc, tc.says) {
			t.Fatalf("%s: reply %s %q (body %q), want %s naming %q", tc.name, code, desc, reply.Data, tc.code, tc.says)
		}
		t.Logf("%s: %s %s", tc.name, code, desc)
	}
	// Fire and forget: nobody to answer; the service goes on.
	if err := f.nc.PublishMsg(&nats.Msg{Subject: subj, Data: []byte("nobody listens")}); err != nil {
		t.Fatal(err)
	}

	// A valid request through the Remote client is still answered.
	rem, err := remote.NewClient(f.b, interceptors.Registration{Plugin: "strict", Stage: events.StageToolBefore, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := rem.Intercept(ctx, &interceptors.Request{Stage: events.StageToolBefore, Event: tb})
	if err != nil || dec == nil || dec.Kind != interceptors.Deny || dec.Reason != "no calculator" {
		t.Fatalf("valid request after the malformed ones: %+v, %v", dec, err)
	}
	mu.Lock()
	if calls != 1 {
		t.Fatalf("the interceptor was called %d times, want 1 (malformed requests must not reach it)", calls)
	}
	mu.Unlock()

	// $SRV.STATS, as any NATS client reads it.
	requests, nErrors := len(cases)+2, len(cases)+1
	var ep *micro.EndpointStats
	waitFor(t, 10*time.Second, func() bool {
		msg, err := f.nc.Request("$SRV.STATS.strict", nil, 10*time.Second)
		if err != nil {
			return false
		}
		var st micro.Stats
		if json.Unmarshal(msg.Data, &st) != nil || len(st.Endpoints) != 1 {
			return false
		}
		ep = st.Endpoints[0]
		return ep.NumRequests == requests
	}, "$SRV.STATS to count %d requests; last %+v", requests, lazy(func() string { return fmt.Sprintf("%+v", ep) }))
	if ep.Name != "tool_before" || ep.NumErrors != nErrors || ep.LastError == "" {
		t.Fatalf("$SRV.STATS endpoint %+v, want %d errors of %d requests", ep, nErrors, requests)
	}
}
