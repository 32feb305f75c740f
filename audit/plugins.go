package audit

import (
	"maps"
	"sort"

	"github.com/hookbus/hookbus/events"
)

// PluginTotals is what one plugin did across every stage it serves: the
// PluginStats of its stages added up, its latencies taken over all its
// calls.
type PluginTotals struct {
	Plugin string `json:"plugin"`
	// Stages are the stages it was called on, in the order a run meets
	// them.
	Stages []events.Stage `json:"stages"`
	Calls  int            `json:"calls"`
	// Runs counts the runs it was called on.
	Runs         int            `json:"runs"`
	P50US        int64          `json:"p50_us"`
	P99US        int64          `json:"p99_us"`
	MaxUS        int64          `json:"max_us"`
	Decisions    map[string]int `json:"decisions"`
	Failures     map[string]int `json:"failures"`
	FailedOpen   int            `json:"failed_open"`
	FailedClosed int            `json:"failed_closed"`
}

// Plugins returns the stats per plugin across its stages, by plugin name.
func (s *Stats) Plugins() []PluginTotals {
	by := map[string]*PluginTotals{}
	lat := map[string][]int64{}
	runs := map[string]map[string]bool{}
	for _, p := range s.List() { // by plugin, stages in run order
		st := s.by[statsKey{p.Plugin, p.Stage}]
		t := by[p.Plugin]
		if t == nil {
			t = &PluginTotals{Plugin: p.Plugin, Decisions: map[string]int{}, Failures: map[string]int{}}
			by[p.Plugin], runs[p.Plugin] = t, map[string]bool{}
		}
		t.Stages = append(t.Stages, p.Stage)
		t.Calls += p.Calls
		t.FailedOpen += p.FailedOpen
		t.FailedClosed += p.FailedClosed
		for k, n := range p.Decisions {
			t.Decisions[k] += n
		}
		for k, n := range p.Failures {
			t.Failures[k] += n
		}
		lat[p.Plugin] = append(lat[p.Plugin], st.latencies...)
		maps.Copy(runs[p.Plugin], st.runs)
	}
	out := make([]PluginTotals, 0, len(by))
	for name, t := range by {
		t.P50US, t.P99US, t.MaxUS = latency(lat[name])
		t.Runs = len(runs[name])
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Plugin < out[j].Plugin })
	return out
}
