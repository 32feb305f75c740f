package loop_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
)

// What the replay of a recorded history sees (observe), in the shape of
// its expected file (testdata/histories/README.md).

// expectation is a history's expected file.
type expectation struct {
	// History is the history's name (its files' and scenario's).
	History string `json:"history"`
	// About says what the history shows (not compared).
	About string `json:"about"`
	observation
}

// observation is what the replay sees of a history.
type observation struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	// Events is how many events the history's session holds.
	Events int `json:"events"`
	// Rebuilt is loop.RebuildSession of the history's session.
	Rebuilt rebuiltSession `json:"rebuilt"`
	// Children are the sessions of the sub-agents the history's runs
	// called, in the order they started, each rebuilt from its own events.
	Children []childSession `json:"children,omitempty"`
	// Runs is what Engine.Run returns for each run that ended in the
	// history (sub-agents' runs too), in the order the runs started; it
	// runs nothing.
	Runs []runEnd `json:"runs"`
	// Resume is what Engine.Run does with the run the history leaves
	// unfinished (a history leaves at most one of its session's).
	Resume *resumeObservation `json:"resume,omitempty"`
}

type rebuiltSession struct {
	Runs     int              `json:"runs"`
	Skipped  []string         `json:"skipped,omitempty"`
	Messages []events.Message `json:"messages"`
	// Compactions is how many compact.after the rebuild read.
	Compactions int `json:"compactions,omitempty"`
	// ReadFrom is where a bounded read of the session starts (the
	// read_from of its last compact.after, as the bus reads it), and
	// ReadEvents how many events it reads; rebuilt, they must give the
	// conversation Messages holds.
	ReadFrom   uint64 `json:"read_from,omitempty"`
	ReadEvents int    `json:"read_events,omitempty"`
}

// childSession is a sub-agent's session in a history.
type childSession struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	// ParentRun is the run that called it.
	ParentRun string         `json:"parent_run"`
	Events    int            `json:"events"`
	Rebuilt   rebuiltSession `json:"rebuilt"`
}

type runEnd struct {
	// Agent and Session are the run's, when not the history's (a
	// sub-agent's run).
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
	RunID   string `json:"run_id"`
	Reason  string `json:"reason"`
	Detail  string `json:"detail,omitempty"`
	Answer  string `json:"answer,omitempty"`
	Steps   int    `json:"steps"`
	Events  int    `json:"events"`
	Resumed bool   `json:"resumed,omitempty"`
	Error   string `json:"error,omitempty"`
	// Waiting are the calls a waiting run (reason waiting) waits on.
	Waiting []waitingCall `json:"waiting,omitempty"`
}

// waitingCall is a call waiting for a human's answer (loop.Result.Waiting).
type waitingCall struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Plugin   string `json:"plugin,omitempty"`
	Reason   string `json:"reason,omitempty"`
	OnExpiry string `json:"on_expiry,omitempty"`
}

// resumeObservation is where the unfinished run was, as its resume shows
// it, and what the resume did.
type resumeObservation struct {
	RunID string `json:"run_id"`
	// LastSeq is the run's last recorded seq: the resume's run.started
	// has the next.
	LastSeq uint64 `json:"last_seq"`
	// StepsDone is the run's last completed step (the resume's
	// run.started's step).
	StepsDone int `json:"steps_done"`
	// HistoryMessages is the messages of the session before the run's
	// prompt (the resume's run.started says).
	HistoryMessages int `json:"history_messages"`
	// Calls are the tool calls of the run's last recorded model reply,
	// each with what the resume did with it.
	Calls []pendingCall `json:"calls"`
	// ModelAsked is each model call of the resume: its step and what the
	// model was shown.
	ModelAsked []modelAsk `json:"model_asked"`
	// ToolsRun is each tool call the resume made.
	ToolsRun []toolRun `json:"tools_run"`
	// Appended is every event the resume appended: "seq N step S stage
	// [subject] [(run R)]".
	Appended []string `json:"appended"`
	Result   runEnd   `json:"result"`
	// Children is what Engine.Run returns, after the resume, for each
	// sub-agent run the history left unfinished (the resume carried them
	// on; it must have ended them).
	Children []runEnd `json:"children,omitempty"`
	// SessionAfter is loop.RebuildSession's messages after the resume.
	SessionAfter []events.Message `json:"session_after"`
}

type modelAsk struct {
	// Agent is the agent asking, when not the history's (a sub-agent).
	Agent string `json:"agent,omitempty"`
	// Purpose is the call's purpose, when not a step (compact).
	Purpose  string           `json:"purpose,omitempty"`
	Step     int              `json:"step"`
	Messages []events.Message `json:"messages"`
}

// replayLog is what the models and tools of one replay were asked.
type replayLog struct {
	mu    sync.Mutex
	asked []modelAsk
	tools []toolRun
}

func (l *replayLog) snapshot() ([]modelAsk, []toolRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.asked), slices.Clone(l.tools)
}

// askedModel records what an agent's model is asked.
type askedModel struct {
	inner loop.Model
	agent string // "" for the history's agent
	log   *replayLog
}

func (m *askedModel) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	m.log.mu.Lock()
	m.log.asked = append(m.log.asked, modelAsk{Agent: m.agent, Purpose: req.Purpose, Step: req.Step, Messages: slices.Clone(req.Messages)})
	m.log.mu.Unlock()
	return m.inner.Generate(ctx, req)
}

// observe replays a history: it loads it into a journal, rebuilds the
// history's session (and each sub-agent's session) from its own events,
// asks the engine for each run that ended (which must run nothing), and
// resumes the run left unfinished.
func observe(t *testing.T, sc *historyScenario, evs []*events.Event) (*observation, error) {
	t.Helper()
	agent, session := historyAgent, sc.name
	lin, err := lineage(sc.name, agent, session, evs)
	if err != nil {
		return nil, err
	}
	mismatch := func(format string, args ...any) error {
		return fmt.Errorf("%w: history %s: %s", errHistoryMismatch, sc.name, fmt.Sprintf(format, args...))
	}
	j := looptest.New()
	j.Load(evs...)
	ob := &observation{Agent: agent, Session: session, Runs: []runEnd{}}
	if ob.Events, ob.Rebuilt, err = rebuildOf(t, j, agent, session); err != nil {
		return nil, mismatch("%v", err)
	}
	for _, c := range lin.children {
		cs := childSession{Agent: c.agent, Session: c.session, ParentRun: c.parentRun}
		if cs.Events, cs.Rebuilt, err = rebuildOf(t, j, c.agent, c.session); err != nil {
			return nil, mismatch("session %s/%s: %v", c.agent, c.session, err)
		}
		ob.Children = append(ob.Children, cs)
	}

	var open, openChildren []string
	for _, run := range runIDs(evs) {
		if !slices.ContainsFunc(evs, func(e *events.Event) bool {
			return e.RunID == run && (e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed)
		}) {
			if lin.parent[run] == "" {
				open = append(open, run)
			} else {
				openChildren = append(openChildren, run)
			}
			continue
		}
		rp, err := sc.replay(t, j, requestOf(evs, run))
		if err != nil {
			return nil, err
		}
		if len(rp.appended) > 0 || len(rp.asked) > 0 || len(rp.tools) > 0 {
			return nil, mismatch("run %s ended in the record, yet Engine.Run appended %d events, asked the model %d times and ran %d tools",
				run, len(rp.appended), len(rp.asked), len(rp.tools))
		}
		ob.Runs = append(ob.Runs, rp.end(run, session))
	}
	switch {
	case len(open) > 1:
		return nil, fmt.Errorf("%w: history %s leaves runs %v unfinished: a history leaves at most one", errBadHistory, sc.name, open)
	case len(open) == 0 && len(openChildren) > 0:
		return nil, fmt.Errorf("%w: history %s leaves sub-agent runs %v unfinished while every run of its session ended", errBadHistory, sc.name, openChildren)
	case len(open) == 0:
		return ob, nil
	}
	for _, c := range openChildren {
		if !lin.descends(c, open[0]) {
			return nil, fmt.Errorf("%w: history %s leaves sub-agent run %s unfinished, not called by its unfinished run %s", errBadHistory, sc.name, c, open[0])
		}
	}

	run := open[0]
	rp, err := sc.replay(t, j, requestOf(evs, run))
	if err != nil {
		return nil, err
	}
	r := &resumeObservation{RunID: run, Calls: []pendingCall{}, ModelAsked: append([]modelAsk{}, rp.asked...),
		ToolsRun: append([]toolRun{}, rp.tools...), Appended: []string{}, Result: rp.end(run, session)}
	for _, e := range rp.appended {
		r.Appended = append(r.Appended, describeAppended(e, run))
	}
	if i := slices.IndexFunc(rp.appended, func(e *events.Event) bool {
		return e.RunID == run && e.Stage == events.StageRunStarted
	}); i >= 0 {
		var p events.RunStarted
		if err := rp.appended[i].DecodeData(&p); err != nil {
			return nil, mismatch("the resume's run.started: %v", err)
		}
		r.LastSeq, r.StepsDone, r.HistoryMessages = rp.appended[i].Seq-1, rp.appended[i].Step, p.HistoryMessages
	}
	r.Calls = classifyCalls(evs, run, rp)
	for _, c := range openChildren {
		cp, err := sc.replay(t, j, requestOf(evs, c))
		if err != nil {
			return nil, err
		}
		if len(cp.appended) > 0 {
			return nil, mismatch("sub-agent run %s is unfinished after the resume of run %s: run again, it appended %d events", c, run, len(cp.appended))
		}
		r.Children = append(r.Children, cp.end(c, session))
	}
	_, after, err := rebuildOf(t, j, agent, session)
	if err != nil {
		return nil, mismatch("after the resume: %v", err)
	}
	r.SessionAfter = after.Messages
	ob.Resume = r
	return ob, nil
}

// rebuildOf rebuilds one session from its own events (the journal's
// SessionEvents filters them), as a worker does, and checks that a read
// bounded by its last compaction rebuilds the same conversation.
func rebuildOf(t *testing.T, j *looptest.Journal, agent, session string) (int, rebuiltSession, error) {
	stored, err := j.SessionEvents(ctxT(t), agent, session)
	if err != nil {
		return 0, rebuiltSession{}, err
	}
	s, err := loop.RebuildSession(stored)
	if err != nil {
		return 0, rebuiltSession{}, err
	}
	out := rebuiltSession{Runs: s.Runs, Messages: s.Messages, Compactions: s.Compactions}
	for _, err := range s.Skipped {
		out.Skipped = append(out.Skipped, err.Error())
	}
	for _, e := range stored {
		var p events.CompactAfter
		if e.Stage == events.StageCompactAfter && e.DecodeData(&p) == nil && p.ReadFrom > 0 && p.ReadFrom <= e.Stored {
			out.ReadFrom = p.ReadFrom
		}
	}
	if out.ReadFrom == 0 {
		return len(stored), out, nil
	}
	i := slices.IndexFunc(stored, func(e *events.Event) bool { return e.Stored >= out.ReadFrom })
	bounded, err := loop.RebuildSession(stored[i:])
	if err != nil {
		return 0, rebuiltSession{}, fmt.Errorf("rebuilt from read_from %d: %w", out.ReadFrom, err)
	}
	out.ReadEvents = len(stored) - i
	var diffs []string
	g, _ := asJSON(bounded.Messages)
	w, _ := asJSON(s.Messages)
	if jsonDiff("messages", g, w, &diffs); len(diffs) > 0 {
		return 0, rebuiltSession{}, fmt.Errorf("rebuilt from read_from %d (its last compaction), the session reads differently from the whole of it: %v", out.ReadFrom, diffs)
	}
	return len(stored), out, nil
}

// runIDs returns the history's runs in the order they started.
func runIDs(evs []*events.Event) []string {
	var out []string
	for _, e := range evs {
		if !slices.Contains(out, e.RunID) {
			out = append(out, e.RunID)
		}
	}
	return out
}

// requestOf is the run request of a recorded run, as a worker that takes
// it over is given it again: the run's session and lineage, and the prompt
// of its intake.
func requestOf(evs []*events.Event, run string) *events.RunRequest {
	i := slices.IndexFunc(evs, func(e *events.Event) bool { return e.RunID == run })
	first := evs[i]
	req := &events.RunRequest{RunID: run, AgentID: first.AgentID, SessionID: first.SessionID, Prompt: "(replay)",
		ParentAgentID: first.ParentAgentID, ParentSessionID: first.ParentSessionID, ParentRunID: first.ParentRunID}
	for _, e := range evs[i:] {
		var p events.Intake
		if e.RunID == run && e.Stage == events.StageIntake && e.DecodeData(&p) == nil && p.Prompt != "" {
			req.Prompt = p.Prompt
			break
		}
	}
	return req
}

// replayed is what one Engine.Run of a replay did.
type replayed struct {
	res      *loop.Result
	err      error
	asked    []modelAsk
	tools    []toolRun
	appended []*events.Event
}

// replay runs req on j, on the engine of its agent, with the scenario's
// models, hooks and configuration, and models and tools that record what
// they are asked.
func (sc *historyScenario) replay(t *testing.T, j *looptest.Journal, req *events.RunRequest) (*replayed, error) {
	t.Helper()
	log := &replayLog{}
	cfg := loop.Config{Tools: (&toolbox{idempotent: sc.idempotent, log: log}).tools()}
	if sc.hooks != nil {
		cfg.Hooks = sc.hooks(t)
	}
	eng := sc.build(t, j, cfg, log, nil)[req.AgentID]
	if eng == nil {
		return nil, fmt.Errorf("%w: history %s holds a run of agent %s (%s), which scenario %s does not have (history_scenarios_test.go)",
			errBadHistory, sc.name, req.AgentID, req.RunID, sc.name)
	}
	before := len(j.Events())
	res, err := eng.Run(ctxT(t), req)
	rp := &replayed{res: res, err: err, appended: j.Events()[before:]}
	rp.asked, rp.tools = log.snapshot()
	return rp, nil
}

// end is how the run ended (or stopped, waiting), as its result says; a
// run of another session than the history's is named with it.
func (rp *replayed) end(run, session string) runEnd {
	out := runEnd{RunID: run}
	if rp.err != nil {
		out.Error = rp.err.Error()
	}
	if r := rp.res; r != nil {
		out.Reason, out.Detail, out.Answer, out.Steps, out.Events, out.Resumed = r.Reason, r.Detail, r.Answer, r.Steps, r.Events, r.Resumed
		if r.SessionID != session || r.AgentID != historyAgent {
			out.Agent, out.Session = r.AgentID, r.SessionID
		}
		for _, w := range r.Waiting {
			out.Waiting = append(out.Waiting, waitingCall{ID: w.Call.ID, Name: w.Call.Name, Plugin: w.Plugin, Reason: w.Reason, OnExpiry: w.OnExpiry})
		}
	}
	return out
}

func describeAppended(e *events.Event, run string) string {
	s := fmt.Sprintf("seq %d step %d %s", e.Seq, e.Step, e.Stage)
	if e.Subject != "" {
		s += " " + e.Subject
	}
	if e.RunID != run {
		s += " (run " + e.RunID + ")"
	}
	return s
}
