package audit

import (
	"slices"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Explain folds one run's events into what decided on each of its calls
// (observer explain): for every tool call, and every other event an
// interceptor was called on, the interceptors and policies that matched it
// in the order they were called, what each decided (with its latency,
// whether it was remote, whether it was a shadow), a policy's rule with
// the expression and the values it saw (HookCall.Policy), and what the
// chain decided in the end. Feed it the run's events in stream order
// (Add); Calls says what it found.
type Explain struct {
	run     string
	pending map[string][]*HookCall // records whose event is not read yet, by event id
	calls   []*ExplainedCall
	byEvent map[string]*ExplainedCall
}

// ExplainedCall is one event of a run and the interceptors' records on it:
// a tool call (CallID set) or another event an interceptor was called on.
type ExplainedCall struct {
	// EventID is the id of the event decided on; Stage, Step, Seq and
	// Time are the event's (the first record's when the event is not
	// recorded: Recorded is then false, the chain refused it before it
	// was stored).
	EventID  string       `json:"event_id"`
	Stage    events.Stage `json:"stage"`
	Step     int          `json:"step,omitempty"`
	Seq      uint64       `json:"seq"`
	Time     time.Time    `json:"time"`
	Recorded bool         `json:"recorded"`
	// Subject is the event's subject: a tool's native name.
	Subject string `json:"subject,omitempty"`
	// CallID is a tool call's id; Action its normalized action, when
	// the record holds one.
	CallID string         `json:"call_id,omitempty"`
	Action *events.Action `json:"action,omitempty"`
	// Hooks are the interceptors' and policies' decisions and failures on
	// the event, in the order the chain called them (shadow ones too,
	// marked Shadow). Empty: nothing matched the call.
	Hooks []*HookCall `json:"hooks"`
	// Outcome is what the chain decided in the end: the decision that
	// ended it (deny, ask, mock, stop, continue; deny for a failure that
	// failed closed), else modify when one rewrote the payload, else
	// allow. By is the interceptor that gave it ("" for allow).
	Outcome string `json:"outcome"`
	By      string `json:"by,omitempty"`
}

// NewExplain returns a fold of run's calls.
func NewExplain(run string) *Explain {
	return &Explain{run: run, pending: map[string][]*HookCall{}, byEvent: map[string]*ExplainedCall{}}
}

// Add folds one event of the run (others are ignored): an interceptor's
// record is kept until the event it decided on is read; a tool.before,
// and any event with records, becomes a call.
func (x *Explain) Add(e *events.Event) {
	if e.RunID != x.run {
		return
	}
	if h, id := hookCall(e); h != nil {
		if id == "" {
			return
		}
		if c := x.byEvent[id]; c != nil { // a record after its event (a tool.after's, replayed out of order)
			c.Hooks = append(c.Hooks, h)
			return
		}
		x.pending[id] = append(x.pending[id], h)
		return
	}
	hooks := x.pending[e.ID]
	delete(x.pending, e.ID)
	if len(hooks) == 0 && e.Stage != events.StageToolBefore {
		return
	}
	c := &ExplainedCall{EventID: e.ID, Stage: e.Stage, Step: e.Step, Seq: e.Seq, Time: e.Time, Recorded: true,
		Subject: e.Subject, Hooks: hooks}
	if call, ok := ToolCallOf(e); ok {
		c.CallID, c.Action = call.ID, call.Action
	}
	x.calls = append(x.calls, c)
	x.byEvent[e.ID] = c
}

// Calls returns the run's calls in the order read, each with its
// outcome, then the events decided on but never recorded (refused before
// they were stored), in the order of their first record.
func (x *Explain) Calls() []*ExplainedCall {
	out := make([]*ExplainedCall, 0, len(x.calls)+len(x.pending))
	for _, c := range x.calls {
		c := *c
		c.Hooks = slices.Clone(c.Hooks)
		if c.Hooks == nil {
			c.Hooks = []*HookCall{}
		}
		c.Outcome, c.By = chainOutcome(c.Hooks)
		out = append(out, &c)
	}
	var orphans []*ExplainedCall
	for id, hs := range x.pending {
		c := &ExplainedCall{EventID: id, Stage: hs[0].Stage, Seq: hs[0].Seq, Time: hs[0].Time, Hooks: slices.Clone(hs)}
		c.Outcome, c.By = chainOutcome(c.Hooks)
		orphans = append(orphans, c)
	}
	slices.SortFunc(orphans, func(a, b *ExplainedCall) int { return int(a.Seq) - int(b.Seq) })
	return append(out, orphans...)
}

// Call returns the events of the tool call whose id is id (its
// tool.before, tool.after, ... with records), or the one event whose id
// is id; empty when the run holds none.
func (x *Explain) Call(id string) []*ExplainedCall {
	return slices.DeleteFunc(x.Calls(), func(c *ExplainedCall) bool { return c.CallID != id && c.EventID != id })
}

// ToolCallOf reads the tool call of a tool stage's event; false for
// another event, or one whose payload holds no call.
func ToolCallOf(e *events.Event) (events.ToolCall, bool) {
	var p struct {
		Call *events.ToolCall `json:"call"`
	}
	if e.Stage.Group() != events.GroupTool || e.DecodeData(&p) != nil || p.Call == nil {
		return events.ToolCall{}, false
	}
	return *p.Call, true
}

// chainOutcome is what a chain that left hs decided: the decision that
// ended it, deny for a failure that failed closed, modify when one
// rewrote the payload, else allow. Shadow records change nothing.
func chainOutcome(hs []*HookCall) (decision, by string) {
	decision = "allow"
	for _, h := range hs {
		if h.Shadow {
			continue
		}
		switch {
		case h.Failure != nil && h.Failure.Outcome == OutcomeFailedClosed:
			return "deny", h.Plugin
		case interceptors.Kind(h.Decision).Ends():
			return h.Decision, h.Plugin
		case h.Decision == "modify" && decision == "allow":
			decision, by = h.Decision, h.Plugin
		}
	}
	return decision, by
}
