package policytest

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/audit/backtest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/policy"
)

// Test replays recorded events through policies and compares their
// decisions with those recorded. Feed it the events of Stages in stream
// order (Add); Report says what it found so far.
type Test struct {
	mem      *replayHistory
	tests    []*tested
	agent    string // a glob of agent ids; "": any
	harness  string // a glob of harnesses; "": any
	since    time.Time
	events   int
	stages   []events.Stage
	current  *events.Event // the event Add is folding
	currentH string        // its harness
}

// tested is one policy under test.
type tested struct {
	p      *policy.Policy // as written
	plugin string
	bts    []*backtest.Backtest // one per stage it matches
	rep    PolicyReport
	counts map[[2]string]*Count // by agent, harness

	mu      sync.Mutex
	decided map[string]*interceptors.Decision // the policy's decision when it applied, by event id, until compared
	applied int
}

// Option configures a Test.
type Option func(*Test) error

// Agents tests only the calls of agents whose id matches glob (path.Match
// syntax).
func Agents(glob string) Option {
	return func(t *Test) error {
		if _, err := path.Match(glob, ""); err != nil {
			return fmt.Errorf("%w: agent glob %q: %v", ErrInvalid, glob, err)
		}
		t.agent = glob
		return nil
	}
}

// Harnesses tests only the calls of harnesses whose name matches glob
// (hookbus, claude, gemini, codex; path.Match syntax).
func Harnesses(glob string) Option {
	return func(t *Test) error {
		if _, err := path.Match(glob, ""); err != nil {
			return fmt.Errorf("%w: harness glob %q: %v", ErrInvalid, glob, err)
		}
		t.harness = glob
		return nil
	}
}

// Since notes in the report the time the events read start from (Run's
// filter reads from it).
func Since(at time.Time) Option {
	return func(t *Test) error {
		t.since = at
		return nil
	}
}

// New compiles each policy as if enforced in every session, each in a
// chain of its own, with a policy.Memory history the record feeds. It
// returns policy.Compile's error (wrapping policy.ErrInvalid) for a policy
// that does not compile, ErrInvalid for a bad option or no policy.
func New(ps []*policy.Policy, opts ...Option) (*Test, error) {
	if len(ps) == 0 {
		return nil, fmt.Errorf("%w: no policy to test", ErrInvalid)
	}
	t := &Test{}
	t.mem = newReplayHistory(t.clock)
	for _, o := range opts {
		if err := o(t); err != nil {
			return nil, err
		}
	}
	for _, p := range ps {
		tp, err := t.prepare(p)
		if err != nil {
			return nil, err
		}
		t.tests = append(t.tests, tp)
		for _, bt := range tp.bts {
			for _, st := range bt.Stages() {
				if !slices.Contains(t.stages, st) {
					t.stages = append(t.stages, st)
				}
			}
		}
	}
	if !slices.Contains(t.stages, events.StageToolBefore) {
		t.stages = append(t.stages, events.StageToolBefore) // the history the session rules read
	}
	return t, nil
}

// prepare compiles p enforced everywhere and builds its backtests.
func (t *Test) prepare(p *policy.Policy) (*tested, error) {
	enforced := *p
	enforced.Spec.Mode, enforced.Spec.Rollout = policy.ModeEnforce, 100
	c, err := policy.Compile(&enforced, policy.WithHistory(t.mem))
	if err != nil {
		return nil, err
	}
	regs := c.Registrations()
	tp := &tested{p: p, counts: map[[2]string]*Count{}, decided: map[string]*interceptors.Decision{},
		rep: PolicyReport{Name: p.Name, Version: p.Version, Mode: string(p.Spec.Mode), Rollout: p.Spec.Rollout, Counts: []Count{}, Flips: []Flip{}}}
	if len(regs) == 0 {
		return tp, nil
	}
	tp.plugin = regs[0].Plugin
	tp.rep.Plugin = tp.plugin
	chain := interceptors.NewChain(interceptors.WithTrust(interceptors.NewGrants(tp.plugin)))
	ic := c.Interceptor()
	watch := interceptors.BoundFunc(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		d, err := ic.Intercept(ctx, req)
		if err != nil || d != nil { // nil: its match or a match condition left the call out
			tp.mu.Lock()
			tp.decided[req.Event.ID] = d
			tp.mu.Unlock()
		}
		return d, err
	})
	for _, reg := range regs {
		reg.Timeout = 0 // no deadline of a worker's: a replay is not in a hurry
		if _, err := chain.Register(reg, watch); err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		tp.bts = append(tp.bts, backtest.New(reg.Stage, reg.Plugin, chain, backtest.Matching(reg),
			backtest.OnDifference(func(d backtest.Difference) { t.flip(tp, d) })))
	}
	return tp, nil
}

// clock is the recorded time of the event Add is folding: the time the
// counters' windows run on.
func (t *Test) clock() time.Time {
	if t.current == nil || t.current.Time.IsZero() {
		return time.Now()
	}
	return t.current.Time
}

// Stages returns the stages the test reads: those of the policies' stages,
// the interceptors' records, the payloads before them, and the tool calls
// the session rules read.
func (t *Test) Stages() []events.Stage { return slices.Clone(t.stages) }

// Add folds one event: it is sent to every policy whose match selects it
// (when its input can be rebuilt from the record), the answers compared
// with what was recorded; then the session history takes it. It returns a
// policy chain's error (an evaluation's own failure is a flip "failed",
// not an error).
func (t *Test) Add(ctx context.Context, e *events.Event) error {
	if t.agent != "" {
		if ok, _ := path.Match(t.agent, e.AgentID); !ok {
			return nil
		}
	}
	h := policy.HarnessOf(e)
	if t.harness != "" {
		if ok, _ := path.Match(t.harness, string(h)); !ok {
			return nil
		}
	}
	t.events++
	t.current, t.currentH = e, string(h)
	defer func() { t.current = nil }()
	for _, tp := range t.tests {
		for _, bt := range tp.bts {
			if err := bt.Add(ctx, e); err != nil {
				return fmt.Errorf("policy %s: %w", tp.p.Name, err)
			}
		}
		tp.mu.Lock()
		_, applied := tp.decided[e.ID]
		delete(tp.decided, e.ID)
		tp.mu.Unlock()
		if applied {
			tp.applied++
			tp.count(e.AgentID, t.currentH).Calls++
		}
	}
	if e.Stage == events.StageToolBefore {
		t.mem.Record(e)
	}
	return nil
}

// count is the count of agent on harness h.
func (tp *tested) count(agent, h string) *Count {
	k := [2]string{agent, h}
	c := tp.counts[k]
	if c == nil {
		c = &Count{Agent: agent, Harness: h}
		tp.counts[k] = c
	}
	return c
}

// flip notes the difference the backtest of tp found on the event Add is
// folding, when it changes the call's outcome.
func (t *Test) flip(tp *tested, d backtest.Difference) {
	kind, ok := flipKind(d, tp.plugin)
	if !ok {
		return
	}
	e := t.current
	f := Flip{Kind: kind, EventID: d.EventID, Stage: e.Stage, Time: d.Time, Agent: d.Agent, Harness: t.currentH,
		Session: d.Session, Run: d.Run, Tool: d.Subject, Recorded: d.Recorded, RecordedBy: d.RecordedBy,
		Decision: d.Candidate, Message: d.Reason}
	if c, ok := audit.ToolCallOf(e); ok {
		f.CallID, f.Tool, f.Action = c.ID, c.Name, c.Action
	}
	tp.mu.Lock()
	dec := tp.decided[d.EventID]
	tp.mu.Unlock()
	if dec != nil && dec.Policy != nil {
		f.Rule, f.Message = dec.Policy.Rule, cmp.Or(dec.Policy.Message, f.Message)
	}
	f.Enforced = tp.p.Spec.Mode == policy.ModeEnforce && policy.InRollout(tp.p.Name, e.SessionID, tp.p.Spec.Rollout)
	tp.rep.Flips = append(tp.rep.Flips, f)
	tp.count(d.Agent, t.currentH).add(kind)
}

// flipKind says how the candidate's decision changes the call's outcome:
// a deny, ask or rewrite the record does not hold, a failure, or an allow
// where the policy's own recorded decision (an earlier version enforced)
// was otherwise. An allow where another interceptor decided changes
// nothing: the policy does not overrule it.
func flipKind(d backtest.Difference, plugin string) (FlipKind, bool) {
	switch c := d.Candidate; {
	case strings.HasPrefix(c, "failed:"):
		return FlipFailed, true
	case c == string(interceptors.Deny):
		return FlipDenied, true
	case c == string(interceptors.Ask):
		return FlipAsked, true
	case c == string(interceptors.Modify):
		return FlipRewritten, true
	case c == string(interceptors.Allow):
		return FlipAllowed, d.RecordedBy == plugin
	}
	return "", false
}

// Report returns what the test found so far.
func (t *Test) Report() *Report {
	r := &Report{Time: time.Now().UTC(), Since: t.since, Agent: t.agent, Harness: t.harness, Events: t.events}
	for _, tp := range t.tests {
		pr := tp.rep
		for _, bt := range tp.bts {
			br := bt.Report()
			pr.Calls += br.Scanned
			pr.Sent += br.Sent
			pr.NotReconstructible += br.NotReconstructible
			pr.Failed += br.Failed
		}
		pr.Matched = tp.applied
		pr.Flips = slices.Clone(tp.rep.Flips)
		pr.Counts = make([]Count, 0, len(tp.counts))
		for _, c := range tp.counts {
			pr.Counts = append(pr.Counts, *c)
		}
		slices.SortFunc(pr.Counts, func(a, b Count) int {
			return cmp.Or(strings.Compare(a.Agent, b.Agent), strings.Compare(a.Harness, b.Harness))
		})
		r.Policies = append(r.Policies, &pr)
	}
	return r
}
