package webui

import (
	"slices"
	"sort"

	"github.com/hookbus/hookbus/events"
)

// statStages are the stages the plugin stats fold.
var statStages = []events.Stage{events.StageHookDecided, events.StageHookFailed}

// PluginStats is one interceptor's record (GET /api/stats).
type PluginStats struct {
	Plugin string   `json:"plugin"`
	Stages []string `json:"stages"`
	Calls  int      `json:"calls"`
	// Decisions counts its decisions by kind (allow, modify, deny, ...).
	Decisions map[string]int `json:"decisions"`
	// Failures counts its failures by kind (timeout, no_responders,
	// bad_reply, error, panic).
	Failures map[string]int `json:"failures,omitempty"`
	// Latency percentiles and maximum over its calls, in microseconds.
	P50US int64 `json:"p50_us"`
	P95US int64 `json:"p95_us"`
	MaxUS int64 `json:"max_us"`
	// Runs counts the runs it was called on.
	Runs int `json:"runs"`

	lat  []int64
	runs map[string]bool
}

// statFold folds hook.decided and hook.failed into per-plugin stats.
type statFold struct {
	by map[string]*PluginStats
}

func newStatFold() *statFold { return &statFold{by: map[string]*PluginStats{}} }

func (f *statFold) plugin(name string, stage events.Stage) *PluginStats {
	p := f.by[name]
	if p == nil {
		p = &PluginStats{Plugin: name, Decisions: map[string]int{}, runs: map[string]bool{}}
		f.by[name] = p
	}
	if s := string(stage); s != "" && !slices.Contains(p.Stages, s) {
		p.Stages = append(p.Stages, s)
	}
	return p
}

func (f *statFold) add(e *events.Event) {
	switch e.Stage {
	case events.StageHookDecided:
		var d events.HookDecided
		if e.DecodeData(&d) != nil {
			return
		}
		p := f.plugin(d.Plugin, d.Stage)
		p.Calls++
		p.Decisions[d.Decision]++
		p.lat = append(p.lat, d.LatencyUS)
		p.runs[e.RunID] = true
	case events.StageHookFailed:
		var d events.HookFailed
		if e.DecodeData(&d) != nil {
			return
		}
		p := f.plugin(d.Plugin, d.Stage)
		p.Calls++
		if p.Failures == nil {
			p.Failures = map[string]int{}
		}
		p.Failures[d.Kind]++
		p.lat = append(p.lat, d.LatencyUS)
		p.runs[e.RunID] = true
	}
}

// list returns the plugins by name, their percentiles computed.
func (f *statFold) list() []*PluginStats {
	out := make([]*PluginStats, 0, len(f.by))
	for _, p := range f.by {
		slices.Sort(p.lat)
		if n := len(p.lat); n > 0 {
			p.P50US, p.P95US, p.MaxUS = p.lat[(n-1)*50/100], p.lat[(n-1)*95/100], p.lat[n-1]
		}
		p.Runs = len(p.runs)
		sort.Strings(p.Stages)
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Plugin < out[j].Plugin })
	return out
}
