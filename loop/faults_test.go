package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
)

// oneCallScript calls the calculator once, then answers with its result.
var oneCallScript = &scripted.Script{Replies: []scripted.Reply{
	{ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}},
	{Content: "6*7 = {{tool:calculator}}"},
}}

// cutAfter runs req on j with an emitter that fails every append after
// the first limit, and checks the attempt was not ended.
func cutAfter(t *testing.T, j *looptest.Journal, limit int, cfg loop.Config, req *events.RunRequest) {
	t.Helper()
	cfg.Emitter = &failingEmitter{inner: j, limit: limit}
	if cfg.Model == nil {
		cfg.Model = scripted.New(oneCallScript)
	}
	res, err := newEngine(t, j, cfg).Run(ctxT(t), req)
	if !errors.Is(err, loop.ErrUnrecorded) || res != nil && res.Ended {
		t.Fatalf("cut attempt: %+v, %v; want it not ended (ErrUnrecorded)", res, err)
	}
	for _, e := range j.Events() {
		if e.Stage == events.StageRunFailed {
			t.Fatal("a failure to record the run was recorded as the run's failure")
		}
	}
}

// checkChains verifies every run's hash chain in evs (audit.Verifier): a
// resumed run's chain goes on across its attempts.
func checkChains(t *testing.T, evs []*events.Event) {
	t.Helper()
	var v audit.Verifier
	for _, e := range evs {
		v.Add(e)
	}
	for _, vd := range v.Verdicts() {
		for _, p := range vd.Problems {
			if p.Kind != audit.ProblemUnsigned {
				t.Errorf("run %s: %s at seq %d: %s", vd.RunID, p.Kind, p.Seq, p.Detail)
			}
		}
	}
}

func countStages(evs []*events.Event, st events.Stage) int {
	n := 0
	for _, e := range evs {
		if e.Stage == st {
			n++
		}
	}
	return n
}

// The raw result of a tool is recorded (tool.result) before the tool.after
// hooks run: a worker that dies while they run does not run the tool again;
// the resumed run gives the recorded result to the hooks.
func TestResumeAfterToolResultDoesNotRunTheToolAgain(t *testing.T) {
	j := looptest.New()
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	var afterCalls atomic.Int32
	hooks := interceptors.NewChain()
	register(t, hooks, interceptors.Registration{Plugin: "audit", Stage: events.StageToolAfter},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			afterCalls.Add(1)
			return &interceptors.Decision{Kind: interceptors.Allow, Context: "audited"}, nil
		})
	calc := &countingTool{name: "calculator", answer: "42"}
	// intake, run.started, step.started, context.assembled, model.responded,
	// tool.before, tool.result | hook.decided, tool.after
	cutAfter(t, j, 7, loop.Config{Tools: []loop.Tool{calc}, Hooks: hooks}, req)
	if calc.calls.Load() != 1 || countStages(j.Events(), events.StageToolResult) != 1 {
		t.Fatalf("before the resume: calculator ran %d times, %d tool.result", calc.calls.Load(), countStages(j.Events(), events.StageToolResult))
	}
	res, err := newEngine(t, j, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}, Hooks: hooks}).Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDone || res.Answer != "6*7 = 42\n\naudited" {
		t.Fatalf("resumed: %+v, %v", res, err)
	}
	evs := j.Events()
	if calc.calls.Load() != 1 {
		t.Fatalf("the calculator ran %d times, want once", calc.calls.Load())
	}
	for st, want := range map[events.Stage]int{events.StageToolBefore: 1, events.StageToolResult: 1, events.StageToolAfter: 1} {
		if n := countStages(evs, st); n != want {
			t.Errorf("%d %s, want %d\n%v", n, st, want, stagesOf(evs))
		}
	}
	if afterCalls.Load() != 2 {
		t.Errorf("tool.after hook called %d times, want 2 (the cut attempt and the resumed one)", afterCalls.Load())
	}
	checkChains(t, j.Events())
}

// A worker that dies after a tool ran but before its result was recorded
// leaves the outcome unknown: the resumed run runs an idempotent tool
// again and reports any other to the model as "outcome unknown", recorded
// as a tool.failed that says so.
func TestResumeWithAToolCallsOutcomeUnknown(t *testing.T) {
	for _, idempotent := range []bool{false, true} {
		t.Run(map[bool]string{false: "not idempotent", true: "idempotent"}[idempotent], func(t *testing.T) {
			j := looptest.New()
			req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
			calc := &countingTool{name: "calculator", answer: "42", idempotent: idempotent}
			// intake, run.started, step.started, context.assembled,
			// model.responded, tool.before | tool.after
			cutAfter(t, j, 6, loop.Config{Tools: []loop.Tool{calc}}, req)
			if calc.calls.Load() != 1 {
				t.Fatalf("the calculator ran %d times before the cut", calc.calls.Load())
			}
			res, err := newEngine(t, j, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), req)
			if err != nil || res.Reason != events.ReasonDone {
				t.Fatalf("resumed: %+v, %v", res, err)
			}
			evs := j.Events()
			failed := payloadsOf[events.ToolFailed](t, evs, events.StageToolFailed)
			after := payloadsOf[events.ToolAfter](t, evs, events.StageToolAfter)
			if len(after) != 1 || countStages(evs, events.StageToolBefore) != 1 {
				t.Fatalf("%d tool.after, %d tool.before; want 1 each\n%v", len(after), countStages(evs, events.StageToolBefore), stagesOf(evs))
			}
			if idempotent {
				if calc.calls.Load() != 2 || len(failed) != 0 || after[0].Result.Content != "42" || res.Answer != "6*7 = 42" {
					t.Fatalf("idempotent: ran %d times, %+v, %+v, answer %q; want it run again", calc.calls.Load(), failed, after[0].Result, res.Answer)
				}
				return
			}
			if calc.calls.Load() != 1 {
				t.Fatalf("the calculator ran %d times, want once: its outcome is unknown, it is not idempotent", calc.calls.Load())
			}
			if len(failed) != 1 || !failed[0].Unknown || !strings.Contains(failed[0].Error, "outcome unknown") {
				t.Fatalf("tool.failed %+v, want one saying the outcome is unknown", failed)
			}
			if !after[0].Result.IsError || !strings.Contains(after[0].Result.Content, "outcome unknown") {
				t.Fatalf("the model was given %+v, want the unknown outcome", after[0].Result)
			}
			checkChains(t, j.Events())
		})
	}
}

// A decision recorded on a tool.before (deny, mock) is taken as it was
// when the run resumes: the tool never runs, even with the hook gone.
func TestResumeTakesTheRecordedDecisionOnAToolCall(t *testing.T) {
	for _, tc := range []struct {
		dec  interceptors.Decision
		want string
	}{
		{interceptors.Decision{Kind: interceptors.Deny, Reason: "no maths"}, "denied: guard: no maths"},
		{interceptors.Decision{Kind: interceptors.Mock, Data: json.RawMessage(`{"content":"41"}`)}, "41"},
	} {
		t.Run(string(tc.dec.Kind), func(t *testing.T) {
			j := looptest.New()
			req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
			hooks := interceptors.NewChain()
			register(t, hooks, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore},
				func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
					d := tc.dec
					return &d, nil
				})
			calc := &countingTool{name: "calculator", answer: "42"}
			// intake, run.started, step.started, context.assembled,
			// model.responded, hook.decided, tool.before | tool.after
			cutAfter(t, j, 7, loop.Config{Tools: []loop.Tool{calc}, Hooks: hooks}, req)
			res, err := newEngine(t, j, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), req)
			if err != nil || res.Reason != events.ReasonDone {
				t.Fatalf("resumed: %+v, %v", res, err)
			}
			if calc.calls.Load() != 0 {
				t.Fatalf("the calculator ran %d times", calc.calls.Load())
			}
			after := payloadsOf[events.ToolAfter](t, j.Events(), events.StageToolAfter)
			if len(after) != 1 || after[0].Result.Content != tc.want {
				t.Fatalf("tool.after %+v, want the result %q", after, tc.want)
			}
			checkChains(t, j.Events())
		})
	}
}

// NATS away longer than the Emitter waits is not the run's failure: Run
// returns ErrUnrecorded, nothing says the run failed, and run again it
// resumes and ends.
func TestUnrecordedRunIsNotFailedAndResumes(t *testing.T) {
	j := looptest.New()
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "go"}
	calc := &countingTool{name: "calculator", answer: "42"}
	down := loop.ToolFunc(events.ToolSpec{Name: "calculator"}, func(ctx context.Context, args json.RawMessage) (string, error) {
		j.Down(nil) // the connection goes while the tool runs
		return calc.Call(ctx, args)
	})
	eng := newEngine(t, j, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{down}})
	if res, err := eng.Run(ctxT(t), req); !errors.Is(err, loop.ErrUnrecorded) || !errors.Is(err, looptest.ErrDown) || res != nil {
		t.Fatalf("run with the record down: %+v, %v; want ErrUnrecorded", res, err)
	}
	j.Up()
	res, err := newEngine(t, j, loop.Config{Model: scripted.New(oneCallScript), Tools: []loop.Tool{calc}}).Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDone || !res.Resumed {
		t.Fatalf("run again: %+v, %v", res, err)
	}
	if countStages(j.Events(), events.StageRunFailed) != 0 {
		t.Fatal("run.failed recorded for an outage")
	}
	checkChains(t, j.Events())
}

// An attempt that lost the session to another attempt of its run stops
// writing and says so with ErrLostRun, which a worker finds wrapped and
// leaves the request to the attempt that holds it.
func TestLostRunIsAbandoned(t *testing.T) {
	err := error(&wrapped{loop.ErrLostRun})
	if !errors.Is(err, loop.ErrLostRun) {
		t.Fatal("a wrapped ErrLostRun is not found")
	}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "wrapped: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// staleHistory lets another run claim the session right after the first
// read: the attempt's claim is refused, and it reads the session again.
type staleHistory struct {
	*looptest.Journal
	t     *testing.T
	reads atomic.Int32
}

func (h *staleHistory) SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error) {
	evs, err := h.Journal.SessionEvents(ctx, agent, session)
	if h.reads.Add(1) == 1 {
		other := rawEvent(h.t, events.StageRunStarted, agent, session, events.NewID(), 1, `{"prompt":"meanwhile"}`)
		if _, err := h.Journal.Claim(ctx, other, 0); err != nil {
			h.t.Errorf("the other claim: %v", err)
		}
	}
	return evs, err
}

func TestAClaimOnAStaleReadReadsTheSessionAgain(t *testing.T) {
	j := looptest.New()
	h := &staleHistory{Journal: j, t: t}
	// KnownSessions -1: the run reads its new session first (no cold
	// start), the read the other claim comes right after.
	eng, err := loop.New(loop.Config{Emitter: j, History: h, Model: scripted.New(oneCallScript), Tools: []loop.Tool{&countingTool{name: "calculator", answer: "42"}}, KnownSessions: -1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || res.Reason != events.ReasonDone || h.reads.Load() != 2 {
		t.Fatalf("run: %+v, %v after %d reads; want it done after reading twice", res, err, h.reads.Load())
	}
	var started events.RunStarted
	for _, e := range runEvents(j.Events(), res.RunID) {
		if e.Stage == events.StageRunStarted {
			if err := e.DecodeData(&started); err != nil {
				t.Fatal(err)
			}
		}
	}
	if started.HistoryMessages != 1 {
		t.Fatalf("run.started %+v: the run did not see the claim made meanwhile", started)
	}
}

// A resumed attempt supersedes the events of the run an earlier attempt
// stored after the resuming one read the record (seq at or past its
// run.started's): a rebuild never holds a turn twice.
func TestRebuildLeavesSupersededEventsOut(t *testing.T) {
	run := events.NewID()
	ev := func(st events.Stage, seq uint64, data string) *events.Event {
		return rawEvent(t, st, "a", "s", run, seq, data)
	}
	msg := func(content string) string {
		return `{"message":{"role":"assistant","content":"` + content + `","tool_calls":[{"id":"c1","name":"calculator","arguments":{}}]}}`
	}
	evs := []*events.Event{
		ev(events.StageRunStarted, 1, `{"prompt":"go"}`),
		ev(events.StageStepStarted, 2, `{"step":1}`),
		// the old attempt's reply, stored after the new attempt read the
		// record (it saw seq 1 and 2)
		ev(events.StageModelResponded, 3, msg("old")),
		ev(events.StageRunStarted, 3, `{"prompt":"go","resumed":true}`),
		ev(events.StageStepStarted, 4, `{"step":1}`),
		ev(events.StageModelResponded, 5, msg("new")),
		ev(events.StageToolAfter, 6, `{"call":{"id":"c1","name":"calculator"},"result":{"call_id":"c1","name":"calculator","content":"42"}}`),
	}
	s, err := loop.RebuildSession(evs)
	if err != nil {
		t.Fatal(err)
	}
	var contents []string
	for _, m := range s.Messages {
		contents = append(contents, string(m.Role)+":"+m.Content)
	}
	if want := []string{"user:go", "assistant:new", "tool:42"}; !slices.Equal(contents, want) {
		t.Fatalf("rebuilt %v, want %v", contents, want)
	}
}

// A tool call its run never answered (the run stopped on the call's
// tool.before) is given a result in the session's next rebuild, so the
// conversation stays one a provider accepts.
func TestRebuildAnswersToolCallsAnEndedRunLeftOpen(t *testing.T) {
	j := looptest.New()
	hooks := interceptors.NewChain()
	register(t, hooks, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Stop, Reason: "enough"}, nil
		})
	first, err := newEngine(t, j, loop.Config{Model: scripted.New(oneCallScript), Hooks: hooks}).Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || first.Reason != events.ReasonStopped {
		t.Fatalf("first run: %+v, %v", first, err)
	}
	evs, _ := j.SessionEvents(ctxT(t), "demo", "s1")
	s, err := loop.RebuildSession(evs)
	if err != nil {
		t.Fatal(err)
	}
	n := len(s.Messages)
	if n != 3 || s.Messages[1].Role != events.RoleAssistant || s.Messages[2].Role != events.RoleTool ||
		s.Messages[2].ToolCallID != s.Messages[1].ToolCalls[0].ID || s.Messages[2].Content != loop.NoResultContent {
		t.Fatalf("rebuilt %+v, want the open call answered", s.Messages)
	}
}

// flakyModel fails with the given errors, then answers from its script.
type flakyModel struct {
	fails []error
	calls atomic.Int32
	next  loop.Model
}

func (m *flakyModel) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	n := int(m.calls.Add(1))
	if n <= len(m.fails) {
		if m.fails[n-1] == nil { // hang until the call's timeout
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, m.fails[n-1]
	}
	return m.next.Generate(ctx, req)
}

func TestModelFailuresAreRetriedAndRecorded(t *testing.T) {
	rateLimited := &loop.ModelError{Provider: "fake", Status: 429, Type: "rate_limit_error", Message: "slow down", Retryable: true, RetryAfter: 20 * time.Millisecond}
	serverError := &loop.ModelError{Provider: "fake", Status: 500, Type: "server_error", Retryable: true}
	badRequest := &loop.ModelError{Provider: "fake", Status: 400, Type: "invalid_request_error", Message: "no"}
	fast := loop.Retry{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		fails  []error
		done   bool
		failed []events.ModelFailed
	}{
		{"429 then 500 then an answer", []error{rateLimited, serverError}, true, []events.ModelFailed{
			{Provider: "fake", Status: 429, Type: "rate_limit_error", Attempt: 1, RetryInMS: 20},
			{Provider: "fake", Status: 500, Type: "server_error", Attempt: 2, RetryInMS: 2},
		}},
		{"not retryable", []error{badRequest}, false, []events.ModelFailed{
			{Provider: "fake", Status: 400, Type: "invalid_request_error", Attempt: 1},
		}},
		{"retries used up", []error{serverError, serverError, serverError}, false, []events.ModelFailed{
			{Provider: "fake", Status: 500, Type: "server_error", Attempt: 1, RetryInMS: 1},
			{Provider: "fake", Status: 500, Type: "server_error", Attempt: 2, RetryInMS: 2},
			{Provider: "fake", Status: 500, Type: "server_error", Attempt: 3},
		}},
		{"slower than the timeout", []error{nil}, true, []events.ModelFailed{
			{Type: "timeout", Attempt: 1, RetryInMS: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := looptest.New()
			model := &flakyModel{fails: tc.fails, next: scripted.New(nil)}
			eng := newEngine(t, j, loop.Config{Model: model, ModelRetry: fast, ModelTimeout: 100 * time.Millisecond})
			res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
			if tc.done && (err != nil || res.Reason != events.ReasonDone) || !tc.done && (err == nil || res.Reason != loop.ReasonFailed) {
				t.Fatalf("run: %+v, %v", res, err)
			}
			got := payloadsOf[events.ModelFailed](t, j.Events(), events.StageModelFailed)
			if len(got) != len(tc.failed) {
				t.Fatalf("model.failed %+v, want %d", got, len(tc.failed))
			}
			for i, w := range tc.failed {
				g := got[i]
				g.Error = ""
				if g != w {
					t.Errorf("model.failed %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// A run that reaches its budget ends with cost_limit naming the bound.
func TestBudgetEndsTheRunWithCostLimit(t *testing.T) {
	j := looptest.New()
	eng := newEngine(t, j, loop.Config{Budget: events.Budget{MaxCostUSD: 0.00001},
		Prices: &events.Prices{InputPerMTok: 3, OutputPerMTok: 15}})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "what is 6*7, and what time is it now?"})
	if err != nil || res.Reason != events.ReasonCostLimit || !strings.Contains(res.Detail, "max_cost_usd") || res.Steps != 1 {
		t.Fatalf("run: %+v, %v; want cost_limit after one step", res, err)
	}
	if res.Usage.CostUSD <= 0 {
		t.Fatalf("usage %+v has no cost", res.Usage)
	}
	// A request's own budget overrides the agent's.
	res, err = eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s2", Prompt: "go", Budget: &events.Budget{MaxCostUSD: 1}})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("run with its own budget: %+v, %v", res, err)
	}
}

// argsModel asks for a call whose arguments are not a JSON object.
type argsModel struct{ calls atomic.Int32 }

func (m *argsModel) Generate(_ context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	if m.calls.Add(1) == 1 {
		return &loop.ModelResponse{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{
			{ID: "c1", Name: "calculator", Arguments: json.RawMessage(`"{\"expression\": \"6*"`)},
		}}}, nil
	}
	return &loop.ModelResponse{Message: events.Message{Role: events.RoleAssistant, Content: req.Messages[len(req.Messages)-1].Content}}, nil
}

func TestToolArgumentsThatAreNotAnObjectAreAToolError(t *testing.T) {
	j := looptest.New()
	calc := &countingTool{name: "calculator", answer: "42"}
	res, err := newEngine(t, j, loop.Config{Model: &argsModel{}, Tools: []loop.Tool{calc}}).Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"})
	if err != nil || res.Reason != events.ReasonDone || calc.calls.Load() != 0 {
		t.Fatalf("run: %+v, %v, calculator ran %d times", res, err, calc.calls.Load())
	}
	if !strings.Contains(res.Answer, "not a JSON object") {
		t.Fatalf("the model was told %q", res.Answer)
	}
}

// The interception request is the stage's event as it is stored, except
// its id: the stored id is minted after the hooks answered.
func TestInterceptionRequestIsTheEventAsStored(t *testing.T) {
	j := looptest.New()
	hooks := interceptors.NewChain()
	var seen []*events.Event
	for _, p := range []string{"one", "two"} {
		register(t, hooks, interceptors.Registration{Plugin: p, Stage: events.StageToolBefore},
			func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
				seen = append(seen, req.Event.Clone())
				return nil, nil
			})
	}
	if _, err := newEngine(t, j, loop.Config{Model: scripted.New(oneCallScript), Hooks: hooks}).Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"}); err != nil {
		t.Fatal(err)
	}
	var stored *events.Event
	for _, e := range j.Events() {
		if e.Stage == events.StageToolBefore {
			stored = e
		}
	}
	decided := payloadsOf[events.HookDecided](t, j.Events(), events.StageHookDecided)
	if len(seen) != 2 || len(decided) != 2 {
		t.Fatalf("%d requests, %d decisions", len(seen), len(decided))
	}
	for i, req := range seen {
		if req.Seq != stored.Seq || req.Step != stored.Step || req.Subject != stored.Subject || req.RunID != stored.RunID || !req.Time.Equal(stored.Time) {
			t.Errorf("request %d: seq %d step %d subject %q; stored seq %d step %d subject %q", i, req.Seq, req.Step, req.Subject, stored.Seq, stored.Step, stored.Subject)
		}
		if req.ID == stored.ID {
			t.Errorf("request %d carried the stored id", i)
		}
		if decided[i].EventID != stored.ID {
			t.Errorf("hook.decided %d names %s, want the stored %s", i, decided[i].EventID, stored.ID)
		}
	}
}

// tool.after hooks are called for every call, denied ones included, as a
// redactor or a logger expects.
func TestToolAfterHooksSeeDeniedCalls(t *testing.T) {
	j := looptest.New()
	hooks := interceptors.NewChain()
	register(t, hooks, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no"}, nil
		})
	var after []string
	register(t, hooks, interceptors.Registration{Plugin: "logger", Stage: events.StageToolAfter},
		func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			var p events.ToolAfter
			_ = req.Event.DecodeData(&p)
			after = append(after, p.Result.Content)
			return nil, nil
		})
	if _, err := newEngine(t, j, loop.Config{Model: scripted.New(oneCallScript), Hooks: hooks}).Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "go"}); err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || after[0] != "denied: guard: no" {
		t.Fatalf("tool.after hook saw %q, want the denied call", after)
	}
	if countStages(j.Events(), events.StageToolResult) != 0 {
		t.Fatal("tool.result recorded for a call that did not run")
	}
}
