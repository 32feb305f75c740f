package bridge

import (
	"encoding/json"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/record"
)

// plan is what one hook input appends to its session: the stage event,
// the records of the interceptors that decided on it, and the run
// boundaries around them. Its events keep their ids from one attempt to
// the next (so a writer finds those an earlier attempt stored); their runs
// and seqs are assigned from the session as read (assign).
type plan struct {
	stage events.Stage
	main  *events.Event
	// records are the hook.decided and hook.failed events of the
	// interceptors called, in call order.
	records []*events.Event
	// newRun is the id of the run the event opens when no run is open.
	newRun string
	// opener opens a run (run.started) before an event that comes when
	// none is open; closer ends the open run a new prompt supersedes.
	opener, closer *events.Event
	// started (intake: the run.started of its run), rejected (intake: the
	// end of a run whose prompt was denied) and ended (stop: the end of
	// the run, when nothing kept it going).
	started, rejected, ended *events.Event
	// tail is what an event that ends a run (run.completed, run.failed)
	// is recorded as when no run is open: a harness.event after the end
	// of the session's last run.
	tail *events.Event
	out  *interceptors.ChainResult
	// order is the last assignment; stored maps the ids of the plan's
	// events stored so far to their runs.
	order  []*events.Event
	stored map[string]string
	// storedAt maps the ids of the plan's events stored so far to their
	// stream sequences.
	storedAt map[string]uint64
}

// newPlan builds the events of in (mapped as m), before any interceptor
// has decided.
func (b *Bridge) newPlan(in harness.Input, m *harness.Mapped) (*plan, error) {
	p := &plan{stage: m.Stage, newRun: events.NewID(), stored: map[string]string{}, storedAt: map[string]uint64{}}
	// The run is the new one until assign says otherwise.
	meta := func(subject string) events.Meta {
		return events.Meta{Source: b.cfg.Source, AgentID: b.cfg.Agent, SessionID: in.Session(), RunID: p.newRun, Subject: subject}
	}
	var err error
	build := func(st events.Stage, subject string, payload any) *events.Event {
		if err != nil {
			return nil
		}
		var e *events.Event
		e, err = events.New(st, meta(subject), payload)
		return e
	}
	p.main = build(m.Stage, m.Subject, m.Payload)
	p.opener = build(events.StageRunStarted, "", events.RunStarted{})
	switch m.Stage {
	case events.StageIntake:
		prompt := m.Payload.(events.Intake).Prompt
		p.closer = build(events.StageRunCompleted, "", events.RunCompleted{Reason: events.ReasonInterrupted,
			Detail: b.title() + " took a new prompt before this run's end"})
		p.started = build(events.StageRunStarted, "", events.RunStarted{Prompt: prompt})
	case events.StageStop:
		p.ended = build(events.StageRunCompleted, "", events.RunCompleted{Reason: events.ReasonDone, Answer: m.Payload.(events.Stop).Answer})
	case events.StageRunCompleted, events.StageRunFailed:
		p.tail = build(events.StageHarnessEvent, in.Event(), events.HarnessEvent{Harness: b.cfg.Harness.Name(), Event: in.Event(), Input: in.Raw(), AfterEnd: true})
	}
	if err != nil {
		return nil, fmt.Errorf("bridge: build %s: %w", m.Stage, err)
	}
	return p, nil
}

// decided takes the interceptors' outcome: the event gets its stored id
// (unknown to them) and their data, and their records become events.
func (p *plan) decided(out *interceptors.ChainResult, source string) error {
	p.out = out
	p.main.ID = events.NewID()
	if len(out.Data) > 0 {
		p.main.Data = out.Data
	}
	for i := range out.Records {
		out.Records[i].EventID = p.main.ID
		st, payload := out.Records[i].Audit()
		e, err := events.New(st, events.Meta{Source: source, AgentID: p.main.AgentID, SessionID: p.main.SessionID, RunID: p.main.RunID,
			Subject: out.Records[i].Plugin}, payload)
		if err != nil {
			return fmt.Errorf("bridge: build %s: %w", st, err)
		}
		p.records = append(p.records, e)
	}
	var err error
	switch {
	case p.stage == events.StageIntake && out.Decision == interceptors.Deny:
		p.rejected, err = events.New(events.StageRunCompleted, events.Meta{Source: source, AgentID: p.main.AgentID, SessionID: p.main.SessionID, RunID: p.main.RunID},
			events.RunCompleted{Reason: events.ReasonRejected, Detail: out.Reason})
	case p.stage == events.StageIntake:
		var in events.Intake
		if in, err = events.Data[events.Intake](p.main); err == nil {
			p.started.Data, err = json.Marshal(events.RunStarted{Prompt: in.Prompt})
		}
	case p.stage == events.StageStop && out.Decision == interceptors.Continue:
		p.ended = nil
	case p.stage == events.StageStop && out.Decision == interceptors.Stop:
		p.ended, err = events.New(events.StageRunCompleted, events.Meta{Source: source, AgentID: p.main.AgentID, SessionID: p.main.SessionID, RunID: p.main.RunID},
			events.RunCompleted{Reason: events.ReasonStopped, Detail: out.Reason})
	}
	if err != nil {
		return fmt.Errorf("bridge: %s: %w", p.stage, err)
	}
	return nil
}

// assign gives the plan's events their runs and seqs on the session as
// read (st), and returns those left to append, in order. Once an earlier
// attempt stored some of them, the rest stay in the runs they were given
// and take the next seqs there; otherwise the runs are worked out afresh
// (docs/PROTOCOL.md, "The bridge"):
//
//   - a prompt (intake) joins the open run when that run has started
//     without a prompt (SessionStart opened it); otherwise it ends an open
//     run (run.completed interrupted) and opens a run of its own: intake,
//     then run.started (run.completed rejected when it was denied);
//   - SessionStart (run.started) opens a run, or is a new attempt of the
//     open one;
//   - SessionEnd (run.completed) and StopFailure (run.failed) end the open
//     run; with none open, they are a harness.event after the end of the
//     session's last run (after_end), not a run of their own;
//   - any other event goes to the open run, or opens one (run.started)
//     first; a Stop nothing kept going ends its run (run.completed).
func (p *plan) assign(st *state) []*events.Event {
	chains := map[string]record.Chain{} // where each run stands for its next event
	seq := func(e *events.Event, run string) *events.Event {
		c, ok := chains[run]
		if !ok {
			c = st.chain(run)
		}
		e.RunID = run
		chains[run] = c.Next(e)
		return e
	}
	var left []*events.Event
	if len(p.stored) > 0 {
		for _, e := range p.order {
			if _, ok := p.stored[e.ID]; !ok {
				left = append(left, seq(e, e.RunID))
			}
		}
		p.order = left
		return left
	}
	open := st.open()
	run := p.newRun
	if open {
		run = st.run
	}
	add := func(run string, evs ...*events.Event) {
		for _, e := range evs {
			if e != nil {
				left = append(left, seq(e, run))
			}
		}
	}
	switch p.stage {
	case events.StageIntake:
		joined := open && st.started && !st.intake
		if !joined {
			if open {
				add(st.run, p.closer)
			}
			run = p.newRun
		}
		add(run, p.records...)
		add(run, p.main)
		switch {
		case p.rejected != nil:
			add(run, p.rejected)
		case !joined:
			add(run, p.started)
		}
	case events.StageRunStarted:
		add(run, p.main)
	case events.StageRunCompleted, events.StageRunFailed:
		switch {
		case open:
			add(run, p.main)
		case st.run != "":
			add(st.run, p.tail)
		default: // a session of nothing but its end
			add(run, p.opener, p.main)
		}
	default:
		if !open || !st.started {
			add(run, p.opener)
		}
		add(run, p.records...)
		add(run, p.main, p.ended)
	}
	p.order = left
	return left
}

// title names the bridge's harness in the record's words.
func (b *Bridge) title() string {
	if t, ok := b.cfg.Harness.(interface{ Title() string }); ok {
		return t.Title()
	}
	switch b.cfg.Harness.Name() {
	case "gemini":
		return "Gemini CLI"
	case "codex":
		return "Codex CLI"
	}
	return "Claude Code"
}
