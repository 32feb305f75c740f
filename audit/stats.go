package audit

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// StatsStages are the stages Stats reads (the interceptors' records): a
// replay may be narrowed to them.
var StatsStages = events.StagesOf(events.GroupHook)

// Outcomes of a failed interceptor call (events.HookFailed.Outcome).
const (
	OutcomeFailedOpen   = "failed_open"
	OutcomeFailedClosed = "failed_closed"
	// OutcomeShadow: a shadow registration's call failed; nothing was
	// applied.
	OutcomeShadow = "shadow"
)

// PluginStats is what one plugin did on one stage.
type PluginStats struct {
	Plugin string       `json:"plugin"`
	Stage  events.Stage `json:"stage"`
	// Calls counts its calls: decisions and failures.
	Calls int `json:"calls"`
	// P50US, P99US and MaxUS are the latency of its calls (decisions and
	// failures), in microseconds: nearest-rank percentiles.
	P50US int64 `json:"p50_us"`
	P99US int64 `json:"p99_us"`
	MaxUS int64 `json:"max_us"`
	// Decisions counts its decisions by kind (allow, modify, deny, mock,
	// ask, stop, continue).
	Decisions map[string]int `json:"decisions"`
	// Failures counts its failures by kind (events.FailTimeout,
	// FailNoResponders, FailBadReply, FailError, FailPanic).
	Failures map[string]int `json:"failures"`
	// FailedOpen counts the failures the chain went on after (policy
	// ignore), FailedClosed those that denied the event (policy fail).
	FailedOpen   int `json:"failed_open"`
	FailedClosed int `json:"failed_closed"`
}

// Failed is the number of failed calls.
func (p *PluginStats) Failed() int {
	n := 0
	for _, c := range p.Failures {
		n += c
	}
	return n
}

type statsKey struct {
	plugin string
	stage  events.Stage
}

type statsState struct {
	PluginStats
	latencies []int64
	runs      map[string]bool
}

// Stats folds hook.decided and hook.failed events into counts per plugin
// and stage. Other stages are ignored. It keeps every call's latency (8
// bytes a call) for exact percentiles, and the ids of the runs each plugin
// was called on (for Plugins). The zero value is ready.
type Stats struct {
	by map[statsKey]*statsState
}

// call counts a call of plugin on stage in run that took latency
// microseconds, and returns the stats of the plugin on the stage.
func (s *Stats) call(plugin string, stage events.Stage, run string, latency int64) *statsState {
	if s.by == nil {
		s.by = map[statsKey]*statsState{}
	}
	k := statsKey{plugin, stage}
	st := s.by[k]
	if st == nil {
		st = &statsState{PluginStats: PluginStats{Plugin: plugin, Stage: stage, Decisions: map[string]int{}, Failures: map[string]int{}},
			runs: map[string]bool{}}
		s.by[k] = st
	}
	st.Calls++
	st.latencies = append(st.latencies, latency)
	st.runs[run] = true
	return st
}

// Add folds one event.
func (s *Stats) Add(e *events.Event) {
	h, _ := hookCall(e)
	if h == nil {
		return
	}
	st := s.call(h.Plugin, h.Stage, e.RunID, h.LatencyUS)
	if h.Failure == nil {
		st.Decisions[h.Decision]++
		return
	}
	st.Failures[h.Failure.Kind]++
	switch h.Failure.Outcome {
	case OutcomeFailedOpen:
		st.FailedOpen++
	case OutcomeFailedClosed:
		st.FailedClosed++
	}
}

// List returns the stats by plugin, then stage in the order a run meets
// them.
func (s *Stats) List() []PluginStats {
	stages := events.Stages()
	rank := func(st events.Stage) int { // unknown stages last
		if i := slices.Index(stages, st); i >= 0 {
			return i
		}
		return len(stages)
	}
	out := make([]PluginStats, 0, len(s.by))
	for _, st := range s.by {
		p := st.PluginStats
		p.P50US, p.P99US, p.MaxUS = latency(slices.Clone(st.latencies))
		p.Decisions, p.Failures = maps.Clone(p.Decisions), maps.Clone(p.Failures)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b PluginStats) int {
		return cmp.Or(strings.Compare(a.Plugin, b.Plugin), cmp.Compare(rank(a.Stage), rank(b.Stage)), strings.Compare(string(a.Stage), string(b.Stage)))
	})
	return out
}

// latency sorts the latencies of calls and returns their nearest-rank 50th
// and 99th percentiles and the largest (0 for none).
func latency(l []int64) (p50, p99, most int64) {
	slices.Sort(l)
	if len(l) > 0 {
		most = l[len(l)-1]
	}
	return percentile(l, 50), percentile(l, 99), most
}

// percentile is the nearest-rank p-th percentile of sorted values (0 for
// none).
func percentile(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}
