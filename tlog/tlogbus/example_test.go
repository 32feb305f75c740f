package tlogbus_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog"
	"github.com/hookbus/hookbus/tlog/tlogbus"
	tnote "github.com/transparency-dev/formats/note"
)

// A checkpointer follows the events stream; an auditor proves the stream
// against its checkpoints; a message deleted afterwards is named.
func ExampleCheckpointer() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "hookbus-example")
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(ctx, embedded.Config{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, _ := srv.Connect()
	defer nc.Close()
	b, _ := bus.New(nc)
	if err := b.Provision(ctx); err != nil {
		panic(err)
	}
	for i, stage := range []events.Stage{events.StageRunStarted, events.StageStepStarted, events.StageRunCompleted} {
		e, _ := events.New(stage, events.Meta{Source: "hookbus/example", AgentID: "support", SessionID: "s1", RunID: "r1", Seq: uint64(i + 1)}, struct{}{})
		if err := b.PublishSync(ctx, e); err != nil {
			panic(err)
		}
	}

	skey, _, _ := tlog.GenerateKey("example.com/hookbus") // observer keygen
	signer, verifier, _ := tnote.NewEd25519SignerVerifier(skey)
	cp, _ := tlogbus.NewCheckpointer(b, tlogbus.CheckpointerConfig{Signer: signer, Verifier: verifier, Interval: 50 * time.Millisecond})
	run, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cp.Run(run) }()
	for cp.Status().Size < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-done

	v, err := tlogbus.VerifyStream(ctx, b, tlogbus.VerifyConfig{LogKey: verifier})
	if err != nil {
		panic(err)
	}
	fmt.Println("checkpoint of size", v.Checkpoint.Size, "proven:", v.Proven, "intact:", v.Intact)

	s, _ := b.JetStream().Stream(ctx, b.Names().Events)
	_ = s.DeleteMsg(ctx, 2)
	v, _ = tlogbus.VerifyStream(ctx, b, tlogbus.VerifyConfig{LogKey: verifier})
	for _, f := range v.Findings {
		fmt.Println(f.Kind, f.Seqs(), f.Fails)
	}
	// Output:
	// checkpoint of size 3 proven: true intact: true
	// trusts_server  false
	// removed seq 2 true
}
