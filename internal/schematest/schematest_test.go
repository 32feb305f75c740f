package schematest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/interceptors/interceptorstest"
	"github.com/hookbus/hookbus/internal/schematest"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Every event of every recorded history (loop/testdata/histories, the
// auditor's test stream too) matches the envelope schema, its data its
// stage's payload schema.
func TestRecordedHistoriesMatchSchemas(t *testing.T) {
	s := schematest.Load(t)
	files, err := filepath.Glob(filepath.Join(schematest.Dir(), "..", "..", "loop", "testdata", "histories", "*.events.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories (%v)", err)
	}
	stages := make(map[string]int)
	for _, f := range files {
		lines, err := schematest.ReadLines(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range lines {
			if err := s.Structured(l); err != nil {
				t.Errorf("%s line %d: %v", filepath.Base(f), i+1, err)
			}
			var head struct{ Type string }
			_ = json.Unmarshal(l, &head)
			stages[head.Type]++
		}
	}
	t.Logf("%d histories, events by type: %v", len(files), stages)
}

// The schemas are not vacuous: what the Go readers refuse, they refuse.
func TestSchemasRefuse(t *testing.T) {
	s := schematest.Load(t)
	good := `{"specversion":"1.0","id":"01KDYAK3498M00000000000001","source":"hookbus/loop","type":"hookbus.tool.before",` +
		`"time":"2026-01-02T03:04:05.001Z","data":{"call":{"id":"c1","name":"bash","arguments":{"cmd":"ls"}}},` +
		`"agentid":"demo","runid":"r1","seq":"000000000001","sessionid":"s1","step":1}`
	if err := s.Structured([]byte(good)); err != nil {
		t.Fatalf("a good event: %v", err)
	}
	for name, doc := range map[string]string{
		"unknown type":             strings.Replace(good, "hookbus.tool.before", "hookbus.tool.sideways", 1),
		"payload of another stage": strings.Replace(good, `{"call":{"id":"c1","name":"bash","arguments":{"cmd":"ls"}}}`, `{"prompt":"hi"}`, 1),
		"call without name":        strings.Replace(good, `,"name":"bash"`, "", 1),
		"no run id":                strings.Replace(good, `"runid":"r1",`, "", 1),
		"id not a ULID":            strings.Replace(good, "01KDYAK3498M00000000000001", "event-1", 1),
		"agent id with a dot":      strings.Replace(good, `"agentid":"demo"`, `"agentid":"de.mo"`, 1),
		"step as a string":         strings.Replace(good, `"step":1`, `"step":"1"`, 1),
		"seq not padded":           strings.Replace(good, `"seq":"000000000001"`, `"seq":"1"`, 1),
		"no data, no dataref":      strings.Replace(good, `"data":{"call":{"id":"c1","name":"bash","arguments":{"cmd":"ls"}}},`, "", 1),
		"half a parent":            strings.Replace(good, `"step":1`, `"step":1,"parentrunid":"r0"`, 1),
	} {
		if err := s.Structured([]byte(doc)); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
	for _, body := range []string{
		`{"decision":"maybe"}`,
		`{"reason":"no decision"}`,
		`{"decision":"modify"}`,
		`{"decision":"modify","data":{"prompt":"x"},"patch":[]}`,
		`{"decision":"modify","data":"not an object"}`,
		`{"decision":"deny","patch":[]}`,
		`{"decision":"allow","data":{"x":1}}`,
		`{"decision":"mock"}`,
		`{"decision":"mock","data":{"content":"x"},"patch":[]}`,
		`{"decision":"continue"}`,
		`{"decision":"modify","patch":[{"op":"replace","path":"/a"}]}`,
		`{"decision":"modify","patch":[{"op":"frobnicate","path":"/a"}]}`,
		`{"decision":"modify","patch":[{"op":"remove","path":"a"}]}`,
		`{"decision":"modify","patch":[{"op":"remove","path":"/a~2"}]}`,
		`{"decision":"deny","warnings":"one"}`,
		`{"decision":"deny","annotations":{"k":1}}`,
	} {
		if _, err := interceptors.ParseDecision([]byte(body)); err == nil && !strings.Contains(body, "warnings") && !strings.Contains(body, "annotations") {
			t.Errorf("ParseDecision accepts %s: the table is wrong", body)
		}
		if err := s.Decision([]byte(body)); err == nil {
			t.Errorf("decision schema accepts %s", body)
		}
	}
	// RFC 6902 asks for from on move and copy; ParseDecision reads a
	// missing one as "" (the whole document), the schema asks for it.
	if err := s.Decision([]byte(`{"decision":"modify","patch":[{"op":"move","path":"/a"}]}`)); err == nil {
		t.Error("decision schema accepts a move without from")
	}
	for _, body := range []string{
		``,
		`{"decision":"allow"}`,
		`{"decision":"allow","data":null}`,
		`{"decision":"modify","patch":[]}`,
		`{"decision":"modify","data":null,"patch":[{"op":"add","path":"/a","value":null}]}`,
		`{"decision":"modify","data":{"prompt":"x"}}`,
		`{"decision":"mock","data":{"content":"42","is_error":false}}`,
		`{"decision":"continue","context":"go on"}`,
		`{"decision":"continue","reason":"go on"}`,
		`{"decision":"deny","reason":"no","warnings":["w"],"annotations":{"k":"v"},"unknown":1}`,
	} {
		if _, err := interceptors.ParseDecision([]byte(body)); err != nil {
			t.Errorf("ParseDecision refuses %s: the table is wrong (%v)", body, err)
		}
		if err := s.Decision([]byte(body)); err != nil {
			t.Errorf("decision schema refuses %s: %v", body, err)
		}
	}
}

// Every request and decision of the interception conformance suite, run
// in process, matches its schema: what the cases send and answer is what
// an interceptor in any language sees and sends.
func TestConformanceMatchesSchemas(t *testing.T) {
	s := schematest.Load(t)
	var mu sync.Mutex
	var bad []string
	checked := 0
	note := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		checked++
		if err != nil {
			bad = append(bad, err.Error())
		}
	}
	interceptorstest.Run(t, func(_ *testing.T, reg interceptors.Registration, ic interceptors.Interceptor) interceptors.Interceptor {
		return interceptors.Func(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			note(s.Event(req.Event))
			d, err := ic.Intercept(ctx, req)
			if err == nil && d != nil {
				body, merr := json.Marshal(d)
				if merr != nil {
					note(merr)
				} else {
					note(s.Decision(body))
				}
			}
			return d, err
		})
	}, interceptorstest.Features{})
	mu.Lock()
	defer mu.Unlock()
	if checked < 50 {
		t.Errorf("only %d requests and decisions checked", checked)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// A live run on the embedded server (hooks in process and over NATS, a
// tool result too large for a message) stores events that match the
// schemas: headers as stored, and each event with its data.
func TestLiveRunMatchesSchemas(t *testing.T) {
	s := schematest.Load(t)
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc, bus.WithMaxPayload(256<<10))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A remote plugin: mocks the weather tool.
	svc, err := remote.Serve(ctx, bustest.Conn(t, srv), remote.ServeConfig{Plugin: "weather-mock", Stages: []events.Stage{events.StageToolBefore}},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return interceptors.Mocked(`{"temp_c":21}`, false), nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	// A spy sees the interception requests as they travel.
	var spyMu sync.Mutex
	var requests []*nats.Msg
	spyConn := bustest.Conn(t, srv)
	spy, err := spyConn.Subscribe("hookbus.hook.>", func(m *nats.Msg) {
		spyMu.Lock()
		requests = append(requests, m)
		spyMu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	// The subscription is the server's before the run sends its requests.
	if err := spyConn.Flush(); err != nil {
		t.Fatal(err)
	}
	defer spy.Unsubscribe()
	hooks := interceptors.NewChain()
	if _, err := remote.Register(b, hooks, interceptors.Registration{Plugin: "weather-mock", Stage: events.StageToolBefore, Tools: "weather"}); err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.Register(interceptors.Registration{Plugin: "redact", Stage: events.StageToolAfter, Tools: "dump"},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Modify, Context: "dump redacted", Patch: []interceptors.PatchOp{
				{Op: "replace", Path: "/result/name", Value: json.RawMessage(`"dump (redacted)"`)}}}, nil
		})); err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.Register(interceptors.Registration{Plugin: "no-maths", Stage: events.StageToolBefore, Tools: "calculator"},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no maths today", Warnings: []string{"w"}, Annotations: map[string]string{"k": "v"}}, nil
		})); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 400<<10)
	dump := loop.ToolFunc(events.ToolSpec{Name: "dump", Description: "a large result"}, func(context.Context, json.RawMessage) (string, error) { return big, nil })
	weather := loop.ToolFunc(events.ToolSpec{Name: "weather"}, func(context.Context, json.RawMessage) (string, error) {
		return "", errors.New("the mock answers")
	})
	script := &scripted.Script{Replies: []scripted.Reply{
		{Content: "Looking.", ToolCalls: []scripted.ToolCall{
			{Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)},
			{Name: "dump", Arguments: json.RawMessage(`{}`)},
		}},
		{Content: "Done: {{tool:weather}}"},
	}}
	eng, err := loop.New(loop.Config{Emitter: b, History: b, Model: scripted.New(script), Hooks: hooks,
		Tools: []loop.Tool{tools.Calculator(), dump, weather}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(ctx, &events.RunRequest{AgentID: "demo", SessionID: "live", Prompt: "weather, 6*7 and a dump"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != events.ReasonDone {
		t.Fatalf("run ended %s: %s", res.Reason, res.Detail)
	}

	// Each event with its data (the claim-checked ones fetched).
	evs, err := b.SessionEvents(ctx, "demo", "live")
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[events.Stage]int)
	refs := 0
	for _, e := range evs {
		seen[e.Stage]++
		if e.DataRef != "" {
			refs++
		}
		if err := s.Event(e); err != nil {
			t.Error(err)
		}
	}
	for _, st := range []events.Stage{events.StageIntake, events.StageToolBefore, events.StageToolAfter, events.StageHookDecided, events.StageRunCompleted} {
		if seen[st] == 0 {
			t.Errorf("no %s event in the run: %v", st, seen)
		}
	}
	if refs == 0 {
		t.Error("no claim-checked event in the run")
	}

	// The headers as stored.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.OrderedConsumer(ctx, b.Names().Events, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"hookbus.evt.demo.live.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("stored message %d: %v", i+1, err)
		}
		if err := s.EventHeaders(events.Header(m.Headers())); err != nil {
			t.Errorf("stored message %d on %s: %v", i+1, m.Subject(), err)
		}
		if len(m.Data()) > 0 {
			st, _ := events.StageFromType(m.Headers().Get("ce-type"))
			if err := s.Payload(st, m.Data()); err != nil {
				t.Errorf("stored message %d: %v", i+1, err)
			}
		}
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		spyMu.Lock()
		defer spyMu.Unlock()
		return len(requests) > 0
	}, "the spy sees the interception request")
	spyMu.Lock()
	defer spyMu.Unlock()
	for _, m := range requests {
		if err := s.RequestHeaders(events.Header(m.Header)); err != nil {
			t.Errorf("request on %s: %v", m.Subject, err)
		}
		if err := s.Payload(events.StageToolBefore, m.Data); err != nil {
			t.Errorf("request on %s: %v", m.Subject, err)
		}
	}
	t.Logf("%d events (%d claim-checked), %d interception requests: %v", len(evs), refs, len(requests), fmt.Sprint(seen))
}
