package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
)

// The round trip of one interception request to a plugin that allows at
// once, served by the TypeScript SDK (a Node.js process) and by remote.Serve
// (in this process, on a TCP connection of its own as the Node.js process
// has), over the same server; the loop's client is in process:
//
//	go test -run '^$' -bench RoundTrip ./sdk/typescript/conformance
func BenchmarkRoundTrip(b *testing.B) {
	srv, nc := bustest.Start(b, bustest.WithListener())
	client := bustest.Provision(b, bustest.Conn(b, srv))
	ev, err := events.New(events.StageToolBefore, events.Meta{Source: "bench", AgentID: "a", SessionID: "s", RunID: events.NewID(), Step: 1, Seq: 1, Subject: "bash"},
		events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "bash", Arguments: []byte(`{"command":"ls -la"}`)}})
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, plugin string) {
		r, err := remote.NewClient(client, interceptors.Registration{Plugin: plugin, Stage: events.StageToolBefore})
		if err != nil {
			b.Fatal(err)
		}
		req := &interceptors.Request{Stage: events.StageToolBefore, Event: ev}
		b.ResetTimer()
		for b.Loop() {
			req.Deadline = time.Now().Add(5 * time.Second)
			if _, err := r.Intercept(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("go", func(b *testing.B) {
		tcp, err := nats.Connect(srv.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		defer tcp.Close()
		svc, err := remote.Serve(context.Background(), tcp, remote.ServeConfig{Plugin: "go-allow", Stages: []events.Stage{events.StageToolBefore}},
			interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return nil, nil }))
		if err != nil {
			b.Fatal(err)
		}
		defer svc.Stop()
		run(b, "go-allow")
	})
	b.Run("typescript", func(b *testing.B) {
		ts := startTS(b, srv.ClientURL(), nc)
		if err := ts.control("serve", map[string]any{"plugin": "ts-allow", "stages": []events.Stage{events.StageToolBefore}, "handler": "allow"}); err != nil {
			b.Fatal(err)
		}
		run(b, "ts-allow")
	})
}
