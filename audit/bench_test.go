package audit_test

import (
	"testing"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/audit/audittest"
)

// The folds' cost per event, on the recorded multi-run stream.
func BenchmarkFolds(b *testing.B) {
	evs := audittest.Stream(b)
	b.Run("runs", func(b *testing.B) {
		for b.Loop() {
			var rs audit.Runs
			for _, e := range evs {
				rs.Add(e)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
	})
	b.Run("stats", func(b *testing.B) {
		for b.Loop() {
			var st audit.Stats
			for _, e := range evs {
				st.Add(e)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
	})
	b.Run("show", func(b *testing.B) {
		for b.Loop() {
			sh := audit.NewShow("01KDYEK349A8")
			for _, e := range evs {
				sh.Add(e)
			}
			if _, err := sh.Tree(sh.Runs()[0]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
	})
}
