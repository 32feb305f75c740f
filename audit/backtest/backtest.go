package backtest

import (
	"context"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Candidate is what a backtest asks: a chain holding the candidate
// interceptor alone (an *interceptors.Chain; Run registers a remote one).
type Candidate interface {
	Run(ctx context.Context, ev *events.Event) (*interceptors.ChainResult, error)
}

// Backtest compares one candidate's decisions on the recorded events of
// one stage with those recorded. Feed it the events of Stages in stream
// order (Add); Report says what it found so far.
type Backtest struct {
	stage   events.Stage
	plugin  string
	cand    Candidate
	before  audit.Before
	pending map[string][]events.HookDecided // records on events not read yet, by event id
	match   *interceptors.Registration      // nil: every event is sent
	onDiff  func(Difference)
	rep     Report
}

// Option configures a Backtest.
type Option func(*Backtest)

// Matching sends the candidate only the events reg matches (its Tools,
// Kinds and Agents: the calls the chain would have called it on); the
// others are counted as not matched and never differ.
func Matching(reg interceptors.Registration) Option {
	return func(bt *Backtest) { bt.match = &reg }
}

// OnDifference calls fn with each difference as Add finds it (Report
// lists them all too).
func OnDifference(fn func(Difference)) Option {
	return func(bt *Backtest) { bt.onDiff = fn }
}

// New returns a backtest of plugin's decisions on stage, asking cand.
func New(stage events.Stage, plugin string, cand Candidate, opts ...Option) *Backtest {
	bt := &Backtest{stage: stage, plugin: plugin, cand: cand, pending: map[string][]events.HookDecided{},
		rep: Report{Stage: stage, Plugin: plugin, Differences: []Difference{}}}
	for _, o := range opts {
		o(bt)
	}
	return bt
}

// Stages returns the stages the backtest reads: its stage, the
// interceptors' records and what audit.Before reads for the stage.
func (bt *Backtest) Stages() []events.Stage {
	out := append([]events.Stage{bt.stage}, events.StagesOf(events.GroupHook)...)
	for _, st := range audit.BeforeStages(bt.stage) {
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out
}

// Add folds one event: an interceptor's record on the stage is kept until
// its event is read; an event of the stage is sent to the candidate (when
// its input can be rebuilt) and the answer compared. It returns the
// candidate chain's error (the call's own failure is a decision
// "failed:<kind>", not an error).
func (bt *Backtest) Add(ctx context.Context, e *events.Event) error {
	bt.before.Add(e)
	if e.Stage.Group() == events.GroupHook {
		if d, ok := recordOf(e); ok && d.Stage == bt.stage {
			bt.pending[d.EventID] = append(bt.pending[d.EventID], d)
		}
		return nil
	}
	if e.Stage != bt.stage {
		return nil
	}
	bt.rep.Scanned++
	recs := bt.pending[e.ID]
	delete(bt.pending, e.ID)
	if bt.match != nil && !bt.match.MatchesCall(e.Subject, events.CallKind(e.Data), e.AgentID) {
		bt.rep.NotMatched++
		return nil
	}
	recorded, by, at := recordedFor(recs, bt.plugin)
	in := input(e, recs, at, bt.before.Of(e))
	if in == nil {
		bt.rep.NotReconstructible++
		return nil
	}
	out, err := bt.cand.Run(ctx, in)
	if err != nil {
		return err
	}
	bt.rep.Sent++
	cand, reason := candidateDecision(out)
	if strings.HasPrefix(cand, "failed:") {
		bt.rep.Failed++
	}
	if cand != recorded {
		bt.rep.Differ++
		d := Difference{
			EventID: e.ID, Time: e.Time, Agent: e.AgentID, Session: e.SessionID, Run: e.RunID, Subject: e.Subject,
			Recorded: recorded, RecordedBy: by, Candidate: cand, Reason: reason,
		}
		bt.rep.Differences = append(bt.rep.Differences, d)
		if bt.onDiff != nil {
			bt.onDiff(d)
		}
	}
	return nil
}

// Report returns what the backtest found so far.
func (bt *Backtest) Report() *Report {
	r := bt.rep
	r.Differences = slices.Clone(bt.rep.Differences)
	return &r
}
