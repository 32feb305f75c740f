package audit_test

import (
	"context"
	"fmt"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
	"github.com/nats-io/nkeys"
)

// A signed run verifies with the signer's public key; its record changed,
// it does not.
func ExampleVerifier() {
	key, _ := nkeys.CreateAccount()
	pub, _ := key.PublicKey()
	j := looptest.New()
	eng, _ := loop.New(loop.Config{Emitter: j, History: j, Model: scripted.New(scripted.Demo()), Tools: tools.Builtin("."), Signer: key})
	if _, err := eng.Run(context.Background(), &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "What time is it?"}); err != nil {
		fmt.Println(err)
		return
	}
	verify := func(evs []*events.Event) {
		v := audit.Verifier{Trust: map[string]bool{pub: true}}
		for _, e := range evs {
			v.Add(e)
		}
		for _, vd := range v.Verdicts() {
			fmt.Println("intact:", vd.OK())
			for _, p := range vd.Problems {
				fmt.Println(p.Kind, p.Seq)
			}
		}
	}
	evs := j.Events()
	verify(evs)

	forged := *evs[3] // someone edits the record
	forged.Data = []byte(`{"messages":[]}`)
	evs[3] = &forged
	verify(evs)
	// Output:
	// intact: true
	// intact: false
	// altered 4
}
