package policies_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/policies"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// BenchmarkLoad is what a process that handles one event (loop
// agent-hook, loop claude-hook) pays to load the stored policies: Sync
// (one watch of the trust bucket, each policy compiled and registered) and
// Stop, with 0, 1 and 10 policies stored.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{0, 1, 10} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			bb := bustest.StartBus(b)
			st := policies.New(bb)
			for i := range n {
				src := strings.Replace(denyRm(fmt.Sprintf("no rm -rf %d", i)), "name: no-rm-rf", fmt.Sprintf("name: no-rm-rf-%d", i), 1)
				ps := parseB(b, src)
				if _, _, err := st.Put(b.Context(), ps, events.Actor{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				s, err := policies.Sync(b.Context(), bb, interceptors.NewChain(), nil)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Loaded()) != n {
					b.Fatalf("loaded %v", s.Loaded())
				}
				s.Stop()
			}
		})
	}
}
