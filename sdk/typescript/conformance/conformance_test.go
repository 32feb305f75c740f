package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/interceptors/interceptorstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// env is a server, a provisioned bus whose Remote clients call the
// TypeScript side, and the TypeScript side.
type env struct {
	srvURL string
	client *bus.Bus
	nc     *nats.Conn
	ts     *tsProcess
}

// newEnv starts a server that takes messages of 8 MiB (a forwarded large
// request must fit) with a client that claim-checks above NATS' default
// 1 MiB, as a loop on a default server does.
func newEnv(t *testing.T) *env {
	t.Helper()
	needSDK(t)
	srv, nc := bustest.Start(t, bustest.WithListener(), bustest.WithMaxPayload(8<<20))
	client := bustest.Provision(t, bustest.Conn(t, srv), bus.WithMaxPayload(1<<20))
	return &env{srvURL: srv.ClientURL(), client: client, nc: nc, ts: startTS(t, srv.ClientURL(), nc)}
}

// TestTypeScriptConformance runs the interception conformance suite on
// plugins served by the TypeScript SDK: each interceptor of the suite is
// served by the SDK in a Node.js process (its decisions still made by the
// suite's Go interceptor, which the SDK asks over NATS: the SDK decodes the
// request, fetches claim-checked data, keeps the deadline, and sends the
// reply or the error), and called through a Remote client as the loop calls
// any plugin.
func TestTypeScriptConformance(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	interceptorstest.Run(t, func(t *testing.T, reg interceptors.Registration, ic interceptors.Interceptor) interceptors.Interceptor {
		if err := e.ts.serve(t, reg.Plugin, []events.Stage{reg.Stage}, ic, nil); err != nil {
			t.Fatalf("serve %s on %s: %v", reg.Plugin, reg.Stage, err)
		}
		r, err := remote.NewClient(e.client, reg)
		if err != nil {
			t.Fatalf("Remote: %v", err)
		}
		return r
	}, interceptorstest.Features{PanicKind: events.FailError})
	t.Logf("the conformance suite on the TypeScript SDK took %v", time.Since(start).Round(time.Millisecond))
}

// The SDK's error replies are remote.Serve's: 400 for a request it cannot read
// (naming the problem, and the handler not called), 504 for a deadline
// passed before the request was handled, 400 for claim-checked data that is
// gone, 500 with the handler's error.
func TestTypeScriptErrorReplies(t *testing.T) {
	e := newEnv(t)
	called := make(chan struct{}, 8)
	ic := interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		called <- struct{}{}
		return nil, errors.New("policy engine down")
	})
	if err := e.ts.serve(t, "errs", []events.Stage{events.StageToolBefore}, ic, nil); err != nil {
		t.Fatal(err)
	}
	good := func() *events.Event {
		ev, err := events.New(events.StageToolBefore, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: events.NewID(), Step: 1, Seq: 1, Subject: "bash"},
			events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "bash"}})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	request := func(h nats.Header, body []byte) *nats.Msg {
		t.Helper()
		m, err := e.nc.RequestMsg(&nats.Msg{Subject: "hookbus.hook.tool.before.errs", Header: h, Data: body}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	encode := func(ev *events.Event) (nats.Header, []byte) {
		h, body, err := events.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		delete(h, events.HeaderMsgID)
		return nats.Header(h), body
	}
	for _, tc := range []struct {
		name, code, says string
		msg              func() (nats.Header, []byte)
	}{
		{"not JSON", "400", "not JSON", func() (nats.Header, []byte) { h, _ := encode(good()); return h, []byte("{oops") }},
		{"no ce-id", "400", "ce-id", func() (nats.Header, []byte) { h, b := encode(good()); h.Del("ce-id"); return h, b }},
		{"another stage", "400", "a tool.after event sent to the tool.before endpoint", func() (nats.Header, []byte) {
			h, b := encode(good())
			h.Set("ce-type", "hookbus.tool.after")
			return h, b
		}},
		{"bad budget", "400", "Hookbus-Timeout-Ms", func() (nats.Header, []byte) {
			h, b := encode(good())
			h.Set(remote.HeaderTimeoutMs, "soon")
			return h, b
		}},
		{"no budget left", "504", "passed before the request was handled", func() (nats.Header, []byte) {
			h, b := encode(good())
			h.Set(remote.HeaderDeadline, time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano))
			return h, b
		}},
		{"data gone", "400", "hookbus_payloads/evt/x/none", func() (nats.Header, []byte) {
			ev := good()
			ev.Data, ev.DataRef = nil, "hookbus_payloads/evt/x/none"
			return encode(ev)
		}},
		{"data elsewhere", "400", "not an object of hookbus_payloads", func() (nats.Header, []byte) {
			ev := good()
			ev.Data, ev.DataRef = nil, "other_bucket/evt/x/none"
			return encode(ev)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := request(tc.msg())
			if code, desc := m.Header.Get(micro.ErrorCodeHeader), m.Header.Get(micro.ErrorHeader); code != tc.code || !strings.Contains(desc, tc.says) {
				t.Fatalf("reply %s %q, want %s saying %q", code, desc, tc.code, tc.says)
			}
			select {
			case <-called:
				t.Fatal("the handler was called")
			default:
			}
		})
	}
	h, b := encode(good())
	h.Set(remote.HeaderTimeoutMs, "5000")
	m := request(h, b)
	if code, desc := m.Header.Get(micro.ErrorCodeHeader), m.Header.Get(micro.ErrorHeader); code != "500" || desc != "policy engine down" {
		t.Fatalf("a failing handler: reply %s %q, want 500 with its error", code, desc)
	}
}

// The SDK's service is found as remote.Serve's is: named after the plugin, one
// endpoint per stage on its hook subject, in the plugin's queue group, with
// hookbus' metadata.
func TestTypeScriptDiscovery(t *testing.T) {
	e := newEnv(t)
	if err := e.ts.serve(t, "pii", []events.Stage{events.StageToolBefore, events.StageToolAfter}, nil, nil); err != nil {
		t.Fatal(err)
	}
	m, err := e.nc.Request("$SRV.INFO.pii", nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(m.Data, &info); err != nil {
		t.Fatal(err)
	}
	if info.Name != "pii" || info.Metadata["hookbus.protocol"] != "1" || info.Metadata["hookbus.prefix"] != "hookbus" || len(info.Endpoints) != 2 {
		t.Fatalf("info %+v", info)
	}
	for i, st := range []events.Stage{events.StageToolBefore, events.StageToolAfter} {
		ep := info.Endpoints[i]
		if ep.Name != strings.ReplaceAll(string(st), ".", "_") || ep.Subject != "hookbus.hook."+string(st)+".pii" || ep.QueueGroup != "pii" || ep.Metadata["hookbus.stage"] != string(st) {
			t.Errorf("endpoint %d: %+v", i, ep)
		}
	}
	// And the loop's client gets an allow from it.
	r, err := remote.NewClient(e.client, interceptors.Registration{Plugin: "pii", Stage: events.StageToolAfter})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := events.New(events.StageToolAfter, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: events.NewID(), Step: 1, Seq: 1},
		events.ToolAfter{Call: events.ToolCall{ID: "c1", Name: "bash"}})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := r.Intercept(context.Background(), &interceptors.Request{Stage: events.StageToolAfter, Event: ev, Deadline: time.Now().Add(5 * time.Second)}); err != nil || d != nil {
		t.Fatalf("Intercept: %+v, %v; want an allow (empty reply)", d, err)
	}
}

// The SDK's generated types (src/schema.ts, src/stages.ts) are what
// docs/schema gives now.
func TestTypeScriptTypesInSync(t *testing.T) {
	node, _ := needSDK(t)
	cmd := exec.Command(node, filepath.Join("scripts", "gen-types.mjs"), "--check")
	cmd.Dir = sdkDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s(%v): regenerate with: cd sdk/typescript && npm run gen", out, err)
	}
}
