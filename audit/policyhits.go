package audit

import (
	"maps"
	"slices"
	"time"

	"github.com/hookbus/hookbus/events"
)

// PolicyHitsStages are the stages PolicyHits reads (the interceptors'
// decisions): a replay may be narrowed to them.
var PolicyHitsStages = []events.Stage{events.StageHookDecided}

// PolicyHits folds the policies' recorded decisions (the events.PolicyHit
// of a hook.decided) into each policy's hits: those enforced, and those
// only recorded (its mode audit or warn, or a session outside its
// rollout), counted by action and by rule, with the latest few. The zero
// value is ready; feed it events in stream order (Add).
type PolicyHits struct {
	byName map[string]*PolicyHitStats
}

// PolicyHitStats is what one policy's rules did in the record.
type PolicyHitStats struct {
	Name string `json:"name"`
	// Enforced counts the decisions applied, by action (deny, ask,
	// mutate, warn, allow: every rule held); WouldHit those only recorded (audit or warn mode, or
	// outside the rollout), by the action the rule would take.
	Enforced map[string]int `json:"enforced"`
	WouldHit map[string]int `json:"would_hit"`
	// Rules counts the hits by the rule that decided (enforced or not; an
	// allow, every rule holding, names none).
	Rules map[string]int `json:"rules"`
	// Versions are the versions that hit, in the order first seen.
	Versions []string `json:"versions"`
	// Latest are the latest hits, newest first (at most MaxLatestHits).
	Latest []PolicyHitRecord `json:"latest"`
}

// MaxLatestHits bounds PolicyHitStats.Latest.
const MaxLatestHits = 20

// PolicyHitRecord is one recorded hit.
type PolicyHitRecord struct {
	Time     time.Time    `json:"time"`
	Agent    string       `json:"agent"`
	Session  string       `json:"session"`
	Run      string       `json:"run"`
	EventID  string       `json:"event_id,omitempty"`
	Stage    events.Stage `json:"stage"`
	Version  string       `json:"version"`
	Rule     string       `json:"rule"`
	Action   string       `json:"action"`
	Enforced bool         `json:"enforced"`
	Message  string       `json:"message,omitempty"`
}

// Add folds one event: a hook.decided that carries a policy's hit.
func (ph *PolicyHits) Add(e *events.Event) {
	if e.Stage != events.StageHookDecided {
		return
	}
	d, err := events.Data[events.HookDecided](e)
	if err != nil || d.Policy == nil || d.Policy.Name == "" {
		return
	}
	p := d.Policy
	if ph.byName == nil {
		ph.byName = map[string]*PolicyHitStats{}
	}
	st := ph.byName[p.Name]
	if st == nil {
		st = &PolicyHitStats{Name: p.Name, Enforced: map[string]int{}, WouldHit: map[string]int{}, Rules: map[string]int{}}
		ph.byName[p.Name] = st
	}
	if p.Enforced {
		st.Enforced[p.Action]++
	} else {
		st.WouldHit[p.Action]++
	}
	if p.Rule != "" {
		st.Rules[p.Rule]++
	}
	if !slices.Contains(st.Versions, p.Version) {
		st.Versions = append(st.Versions, p.Version)
	}
	st.Latest = append([]PolicyHitRecord{{Time: e.Time, Agent: e.AgentID, Session: e.SessionID, Run: e.RunID, EventID: d.EventID,
		Stage: d.Stage, Version: p.Version, Rule: p.Rule, Action: p.Action, Enforced: p.Enforced, Message: p.Message}}, st.Latest...)
	if len(st.Latest) > MaxLatestHits {
		st.Latest = st.Latest[:MaxLatestHits]
	}
}

// Of returns the hits of the policy name, or nil when it has none.
func (ph *PolicyHits) Of(name string) *PolicyHitStats {
	st := ph.byName[name]
	if st == nil {
		return nil
	}
	c := *st
	c.Latest = slices.Clone(st.Latest)
	return &c
}

// Names returns the names of the policies that hit, sorted.
func (ph *PolicyHits) Names() []string {
	return slices.Sorted(maps.Keys(ph.byName))
}
