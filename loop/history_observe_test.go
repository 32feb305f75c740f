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
	"github.com/hookbus/hookbus/loop/scripted"
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
	// Events is how many events the history holds.
	Events int `json:"events"`
	// Rebuilt is loop.RebuildSession of the history.
	Rebuilt rebuiltSession `json:"rebuilt"`
	// Runs is what Engine.Run returns for each run that ended in the
	// history, in the order the runs started; it runs nothing.
	Runs []runEnd `json:"runs"`
	// Resume is what Engine.Run does with the run the history leaves
	// unfinished (a history leaves at most one).
	Resume *resumeObservation `json:"resume,omitempty"`
}

type rebuiltSession struct {
	Runs     int              `json:"runs"`
	Skipped  []string         `json:"skipped,omitempty"`
	Messages []events.Message `json:"messages"`
}

type runEnd struct {
	RunID   string `json:"run_id"`
	Reason  string `json:"reason"`
	Detail  string `json:"detail,omitempty"`
	Answer  string `json:"answer,omitempty"`
	Steps   int    `json:"steps"`
	Events  int    `json:"events"`
	Resumed bool   `json:"resumed,omitempty"`
	Error   string `json:"error,omitempty"`
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
	// [subject]".
	Appended []string `json:"appended"`
	Result   runEnd   `json:"result"`
	// SessionAfter is loop.RebuildSession's messages after the resume.
	SessionAfter []events.Message `json:"session_after"`
}

// pendingCall is one tool call of the reply a resume carries on, and what
// the resume did with it:
//
//	done               its tool.after is in the record; left as it is
//	run                no tool.before in the record: run as a new call
//	run_again          outcome unknown (tool.before, no result), idempotent: run again, no new tool.before
//	unknown            outcome unknown, not idempotent: tool.failed (unknown), not run
//	recorded_result    its tool.result is in the record: tool.after from it, not run
//	recorded_decision  a decision on its recorded tool.before (deny, mock): tool.after from it, not run
//	intercepted        a new tool.before whose hooks answered it: not run
//	untouched          nothing done (the run ended first)
type pendingCall struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Action string `json:"action"`
}

type modelAsk struct {
	Step     int              `json:"step"`
	Messages []events.Message `json:"messages"`
}

// askedModel records what the model is asked.
type askedModel struct {
	inner loop.Model
	mu    sync.Mutex
	log   []modelAsk
}

func (m *askedModel) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	m.mu.Lock()
	m.log = append(m.log, modelAsk{Step: req.Step, Messages: slices.Clone(req.Messages)})
	m.mu.Unlock()
	return m.inner.Generate(ctx, req)
}

func (m *askedModel) asked() []modelAsk {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.log)
}

// observe replays a history: it loads it into a journal, rebuilds the
// session, asks the engine for each run that ended (which must run
// nothing), and resumes the run left unfinished.
func observe(t *testing.T, sc *historyScenario, evs []*events.Event) (*observation, error) {
	t.Helper()
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: history %s holds no events", errBadHistory, sc.name)
	}
	agent, session := evs[0].AgentID, evs[0].SessionID
	for _, e := range evs {
		if e.AgentID != agent || e.SessionID != session {
			return nil, fmt.Errorf("%w: history %s: event %s is of session %s/%s, not %s/%s", errBadHistory, sc.name, e.ID, e.AgentID, e.SessionID, agent, session)
		}
	}
	mismatch := func(format string, args ...any) error {
		return fmt.Errorf("%w: history %s: %s", errHistoryMismatch, sc.name, fmt.Sprintf(format, args...))
	}
	j := looptest.New()
	j.Load(evs...)
	ob := &observation{Agent: agent, Session: session, Events: len(evs), Runs: []runEnd{}}
	s, err := rebuildOf(t, j, agent, session)
	if err != nil {
		return nil, mismatch("%v", err)
	}
	ob.Rebuilt = rebuiltSession{Runs: s.Runs, Messages: s.Messages}
	for _, err := range s.Skipped {
		ob.Rebuilt.Skipped = append(ob.Rebuilt.Skipped, err.Error())
	}

	var open []string
	for _, run := range runIDs(evs) {
		if !slices.ContainsFunc(evs, func(e *events.Event) bool {
			return e.RunID == run && (e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed)
		}) {
			open = append(open, run)
			continue
		}
		rp := sc.replay(t, j, requestOf(evs, run))
		if len(rp.appended) > 0 || len(rp.asked) > 0 || len(rp.tools) > 0 {
			return nil, mismatch("run %s ended in the record, yet Engine.Run appended %d events, asked the model %d times and ran %d tools",
				run, len(rp.appended), len(rp.asked), len(rp.tools))
		}
		ob.Runs = append(ob.Runs, rp.end(run))
	}
	switch len(open) {
	case 0:
		return ob, nil
	case 1:
	default:
		return nil, fmt.Errorf("%w: history %s leaves runs %v unfinished: a history leaves at most one", errBadHistory, sc.name, open)
	}

	run := open[0]
	rp := sc.replay(t, j, requestOf(evs, run))
	r := &resumeObservation{RunID: run, Calls: []pendingCall{}, ModelAsked: append([]modelAsk{}, rp.asked...),
		ToolsRun: append([]toolRun{}, rp.tools...), Appended: []string{}, Result: rp.end(run)}
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
	after, err := rebuildOf(t, j, agent, session)
	if err != nil {
		return nil, mismatch("after the resume: %v", err)
	}
	r.SessionAfter = after.Messages
	ob.Resume = r
	return ob, nil
}

func rebuildOf(t *testing.T, j *looptest.Journal, agent, session string) (*loop.Session, error) {
	stored, err := j.SessionEvents(ctxT(t), agent, session)
	if err != nil {
		return nil, err
	}
	return loop.RebuildSession(stored)
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
// it over is given it again: the prompt of its intake.
func requestOf(evs []*events.Event, run string) *events.RunRequest {
	req := &events.RunRequest{RunID: run, AgentID: evs[0].AgentID, SessionID: evs[0].SessionID, Prompt: "(replay)"}
	for _, e := range evs {
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

// replay runs req on j with the scenario's model and hooks, and tools that
// record their calls.
func (sc *historyScenario) replay(t *testing.T, j *looptest.Journal, req *events.RunRequest) *replayed {
	t.Helper()
	model := &askedModel{inner: scripted.New(sc.script)}
	box := &toolbox{idempotent: sc.idempotent}
	cfg := loop.Config{Model: model, Tools: box.tools()}
	if sc.hooks != nil {
		cfg.Hooks = sc.hooks(t)
	}
	before := len(j.Events())
	res, err := sc.engine(t, j, cfg).Run(ctxT(t), req)
	return &replayed{res: res, err: err, asked: model.asked(), tools: box.calls(), appended: j.Events()[before:]}
}

func (rp *replayed) end(run string) runEnd {
	out := runEnd{RunID: run}
	if rp.err != nil {
		out.Error = rp.err.Error()
	}
	if r := rp.res; r != nil {
		out.Reason, out.Detail, out.Answer, out.Steps, out.Events, out.Resumed = r.Reason, r.Detail, r.Answer, r.Steps, r.Events, r.Resumed
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

// classifyCalls says what the resume did with each tool call of the run's
// last recorded model reply (see pendingCall). A tool's runs are matched
// by its name: no recorded reply calls one tool twice.
func classifyCalls(hist []*events.Event, run string, rp *replayed) []pendingCall {
	var reply *events.ModelResponded
	for _, e := range hist {
		var p events.ModelResponded
		if e.RunID == run && e.Stage == events.StageModelResponded && e.DecodeData(&p) == nil {
			reply = &p
		}
	}
	out := []pendingCall{}
	if reply == nil {
		return out
	}
	for _, c := range reply.Message.ToolCalls {
		recAfter := hasCall(hist, run, events.StageToolAfter, c.ID, false)
		recResult := hasCall(hist, run, events.StageToolResult, c.ID, false)
		before := hasCall(rp.appended, run, events.StageToolBefore, c.ID, false)
		after := hasCall(rp.appended, run, events.StageToolAfter, c.ID, false)
		unknown := hasCall(rp.appended, run, events.StageToolFailed, c.ID, true)
		ran := slices.ContainsFunc(rp.tools, func(r toolRun) bool { return r.Name == c.Name })
		var action string
		switch {
		case !before && !after && !ran && recAfter:
			action = "done"
		case !before && !after && !ran:
			action = "untouched"
		case before && ran && after:
			action = "run"
		case before && !ran && after:
			action = "intercepted"
		case !before && ran && after:
			action = "run_again"
		case !before && !ran && after && unknown:
			action = "unknown"
		case !before && !ran && after && recResult:
			action = "recorded_result"
		case !before && !ran && after:
			action = "recorded_decision"
		default:
			action = fmt.Sprintf("unexpected (new tool.before %t, ran %t, new tool.after %t)", before, ran, after)
		}
		out = append(out, pendingCall{ID: c.ID, Name: c.Name, Action: action})
	}
	return out
}

// hasCall reports whether evs hold an event of run at stage st about call
// id (with unknown set: a tool.failed saying its outcome is unknown).
func hasCall(evs []*events.Event, run string, st events.Stage, id string, unknown bool) bool {
	return slices.ContainsFunc(evs, func(e *events.Event) bool {
		var p struct {
			Call    events.ToolCall `json:"call"`
			Unknown bool            `json:"unknown"`
		}
		return e.RunID == run && e.Stage == st && e.DecodeData(&p) == nil && p.Call.ID == id && (!unknown || p.Unknown)
	})
}
