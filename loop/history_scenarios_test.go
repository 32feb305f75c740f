package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
)

// The scenarios of the recorded histories (testdata/histories): how the
// recorder makes each (TestRecordHistories) and what the replay needs to
// carry on the run a history leaves unfinished (TestRecordedHistories).
// Every history is one session of agent historyAgent, named after its
// scenario (and the sessions of the sub-agents its runs call).

// historyAgent is the agent of every recorded history.
const historyAgent = "demo"

// historyNow is the clock tool's time in every recording and replay, so a
// recording is the same each time it is made.
var historyNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// historyScenario is one recorded history.
type historyScenario struct {
	name string
	// about says what the history shows; the recorder writes it into the
	// expected file for whoever reads it.
	about string
	// script is the model of every run, recorded or replayed (nil: the
	// demo script).
	script *scripted.Script
	// record runs the engine on j, in the session named after the
	// scenario.
	record func(t *testing.T, sc *historyScenario, j *looptest.Journal)
	// hooks are the interceptors of the replayed runs (nil: none).
	hooks func(t *testing.T) *interceptors.Chain
	// idempotent names the tools the replay declares idempotent.
	idempotent []string
	// config configures the scenario's agent beyond its model, tools and
	// hooks (compaction, approval policy), on every engine of the agent,
	// recorded or replayed; it may wrap cfg.Model (nil: nothing more).
	config func(cfg *loop.Config)
	// subagents are the agents the scenario's agent may call (the Task
	// tool), each on an engine of its own on the same journal.
	subagents []historySubagent
	// frozen, when set, says why the history must never be recorded again:
	// the engine no longer makes what it holds, and the replay must still
	// read it. The recorder refuses it.
	frozen string
}

// historySubagent is an agent the scenario's agent may call.
type historySubagent struct {
	id, description string
	// script is its model, recorded or replayed.
	script *scripted.Script
}

// historyScenarios returns every scenario, in the order they are recorded.
func historyScenarios() []*historyScenario {
	return append(append(firstScenarios(), shapeScenarios()...), closingScenarios()...)
}

// firstScenarios are the histories of the first recording (runs, hooks,
// attempts and resumes).
func firstScenarios() []*historyScenario {
	return []*historyScenario{
		{
			name:  "plain",
			about: "The demo script (the clock and the calculator, then the answer), two runs of one session: the second run's model sees the first run's turn.",
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				sc.mustRun(t, j, loop.Config{}, "What time is it, and what is 6*7?", events.ReasonDone)
				sc.mustRun(t, j, loop.Config{}, "And once more?", events.ReasonDone)
			},
		},
		{
			name: "hooks-modify-mock",
			about: "One run whose hooks change what happens: intake rewrites the prompt, context.assembled redacts what the model sees (not the record), " +
				"tool.before mocks the clock and rewrites the calculator's arguments, tool.after adds context, model.responded rewrites the answer. " +
				"The rebuilt session holds each change as it took effect.",
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				sc.mustRun(t, j, loop.Config{Hooks: modifyHooks(t)}, "My password is secret-123. What time is it, and what is 6*7?", events.ReasonDone)
			},
		},
		{
			name: "hooks-deny",
			about: "Five runs of one session, each ended or changed by a hook: a denied tool call (its reason goes to the model), a denied model reply " +
				"(the run ends denied; the reply is left out of the session), a stop on tool.before (the run ends stopped; its open tool calls are given " +
				"a no-result answer), a model.responded hook that fails with policy fail (denied), an ask on tool.before (no approver: a deny, with " +
				"approval.requested and approval.resolved recorded).",
			frozen: "its fifth run records the engine's old reading of a tool.before ask (no approver: a deny, approval.requested and " +
				"approval.resolved in one attempt, the run going on); the engine now makes the run wait for an answer (see approval-answered), " +
				"so a new recording would hold another history. It stays as the record an old stream holds, which the replay must still read.",
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				deny := func(plugin string, st events.Stage, tool string, d interceptors.Decision) loop.Config {
					c := interceptors.NewChain()
					register(t, c, interceptors.Registration{Plugin: plugin, Stage: st, Tools: tool, Builtin: st == events.StageModelResponded},
						func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { dd := d; return &dd, nil })
					return loop.Config{Hooks: c}
				}
				sc.mustRun(t, j, deny("policy", events.StageToolBefore, "calculator", interceptors.Decision{Kind: interceptors.Deny, Reason: "no maths on Sundays"}),
					"What is 6*7? (the calculator is denied)", events.ReasonDone)
				sc.mustRun(t, j, deny("guard", events.StageModelResponded, "", interceptors.Decision{Kind: interceptors.Deny, Reason: "no tools today"}),
					"What is 6*7? (the reply is denied)", events.ReasonDenied)
				sc.mustRun(t, j, deny("breaker", events.StageToolBefore, "clock", interceptors.Decision{Kind: interceptors.Stop, Reason: "circuit open"}),
					"What time is it? (the clock stops the run)", events.ReasonStopped)
				failing := interceptors.NewChain()
				register(t, failing, interceptors.Registration{Plugin: "checker", Stage: events.StageModelResponded, Builtin: true, Policy: interceptors.PolicyFail},
					func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
						return nil, errors.New("checker unavailable")
					})
				sc.mustRun(t, j, loop.Config{Hooks: failing}, "What is 6*7? (the checker fails closed)", events.ReasonDenied)
				sc.mustRun(t, j, deny("approver", events.StageToolBefore, "calculator", interceptors.Decision{Kind: interceptors.Ask, Reason: "may I do maths?"}),
					"What is 6*7? (the calculator asks for approval)", events.ReasonDone)
			},
		},
		{
			name:   "stop-continue",
			about:  "A stop hook answers continue once: its message is a user message of the session, and the run takes one more step before it ends.",
			script: checkTwiceScript,
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				c := interceptors.NewChain()
				register(t, c, interceptors.Registration{Plugin: "judge", Stage: events.StageStop},
					func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
						var p events.Stop
						if err := req.Event.DecodeData(&p); err != nil {
							return nil, err
						}
						if p.Continues > 0 {
							return nil, nil
						}
						return &interceptors.Decision{Kind: interceptors.Continue, Context: "Check the result once more."}, nil
					})
				sc.mustRun(t, j, loop.Config{Hooks: c}, "What is 6*7?", events.ReasonDone)
			},
		},
		{
			name: "resumed",
			about: "A run cut off after the clock's tool.after (the worker lost its connection), then resumed by another attempt: the run has two " +
				"run.started, the prompt is in the session once, the clock is not run again.",
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				req := sc.request("What time is it, and what is 6*7?")
				sc.cut(t, j, loop.Config{}, req, 7)
				res, err := sc.engine(t, j, loop.Config{}).Run(ctxT(t), req)
				if err != nil || res.Reason != events.ReasonDone || !res.Resumed {
					t.Fatalf("resumed attempt: %+v, %v", res, err)
				}
			},
		},
		{
			name: "fenced-takeover",
			about: "Two attempts of one run: the first is paused in the calculator while the second claims the session, runs the calculator " +
				"again (it is idempotent there) and ends the run; the first, when it wakes, can store nothing more (its tool.after is refused by the fence).",
			record: recordTakeover,
		},
		{
			name: "superseded",
			about: "Two attempts of one run: the first stores its clock tool.after (seq 7) after the second read the record and before the second's " +
				"run.started (also seq 7). That tool.after is superseded: the rebuild leaves it out, and the second attempt reports the clock's outcome " +
				"as unknown (the clock is not idempotent). The first attempt's next append is refused.",
			record: recordSuperseded,
		},
		{
			name: "takeover-by-another-run",
			about: "Run A is paused in the clock while run B of the same session claims the session and ends; A, when it wakes, records " +
				"run.failed (taken over, one writer per session) on B's claim. A's open tool calls are answered (no result) before B's prompt, so " +
				"every call is followed by its result, as providers require. (Recorded again deliberately when the rebuild was fixed: the first " +
				"recording left them open until A's run.failed, after B's turn.)",
			frozen: "run A's run.failed is the engine's old closing: numbered after its refused tool.after (seq 8, seq 7 never stored) " +
				"and chained to it; the engine now records the clock's outcome unknown and chains the end to the last stored event " +
				"(takeover-outcome-unknown shows it), so a new recording would hold another history. It stays as the record an old " +
				"stream holds, which the replay must still read.",
			record: recordTakeoverByAnotherRun,
		},
		{
			name: "answer-before-crash",
			about: "Unfinished: the run was cut off after its last step gave the answer (step.completed of step 2), before stop and run.completed. " +
				"The resume ends it done without asking the model again.",
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				sc.cut(t, j, loop.Config{}, sc.request("What time is it, and what is 6*7?"), 14)
			},
		},
		{
			name: "outcome-unknown",
			about: "Unfinished: the run was cut off after the calculator's tool.before, while the calculator ran. The clock's call is done; the " +
				"calculator's outcome is unknown and it is not idempotent: the resume reports it to the model as unknown (tool.failed, unknown) and does not run it.",
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				sc.cut(t, j, loop.Config{}, sc.request("What time is it, and what is 6*7?"), 8)
			},
		},
		{
			name: "outcome-unknown-idempotent",
			about: "Unfinished: as outcome-unknown, but the replay declares the calculator idempotent: the resume runs it again, without a second " +
				"tool.before.",
			idempotent: []string{"calculator"},
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				sc.cut(t, j, loop.Config{}, sc.request("What time is it, and what is 6*7?"), 8)
			},
		},
		{
			name: "tool-result-before-crash",
			about: "Unfinished: a tool.after hook is registered, so each tool's raw result is recorded (tool.result) before the hooks run; the run was " +
				"cut off after the calculator's tool.result. The resume gives the recorded result to the tool.after hooks and does not run the calculator again.",
			hooks: auditHooks,
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				sc.cut(t, j, loop.Config{Hooks: auditHooks(t)}, sc.request("What time is it, and what is 6*7?"), 11)
			},
		},
		{
			name: "decision-before-crash",
			about: "Unfinished: a hook denied the clock on tool.before, and the run was cut off right after that tool.before. The resume, with the " +
				"hook gone, takes the recorded deny (the clock does not run) and runs the calculator, whose call was never started.",
			record: func(t *testing.T, sc *historyScenario, j *looptest.Journal) {
				c := interceptors.NewChain()
				register(t, c, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Tools: "clock"},
					func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
						return &interceptors.Decision{Kind: interceptors.Deny, Reason: "the clock is off limits"}, nil
					})
				sc.cut(t, j, loop.Config{Hooks: c}, sc.request("What time is it, and what is 6*7?"), 7)
			},
		},
	}
}

// checkTwiceScript calls the calculator, answers, and answers again when a
// stop hook asks it to go on.
var checkTwiceScript = &scripted.Script{Name: "check-twice", Replies: []scripted.Reply{
	{Content: "Let me work that out.", ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}},
	{Content: "6*7 = {{tool:calculator}}"},
	{Content: "Checked again: 6*7 = {{tool:calculator}}. ({{prompt}})"},
}}

// modifyHooks changes something on every stage it can.
func modifyHooks(t *testing.T) *interceptors.Chain {
	c := interceptors.NewChain()
	register(t, c, interceptors.Registration{Plugin: "ticketing", Stage: events.StageIntake},
		func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			var p events.Intake
			if err := req.Event.DecodeData(&p); err != nil {
				return nil, err
			}
			p.Prompt = "[ticket 7] " + p.Prompt
			return interceptors.Replace(p)
		})
	register(t, c, interceptors.Registration{Plugin: "redactor", Stage: events.StageContextAssembled, Builtin: true},
		func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			var p events.ContextAssembled
			if err := req.Event.DecodeData(&p); err != nil {
				return nil, err
			}
			for i := range p.Messages {
				p.Messages[i].Content = strings.ReplaceAll(p.Messages[i].Content, "secret-123", "[redacted]")
			}
			return interceptors.Replace(p)
		})
	register(t, c, interceptors.Registration{Plugin: "eval", Stage: events.StageToolBefore, Tools: "clock"},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return interceptors.Mocked("1999-12-31T23:59:59Z", false), nil
		})
	register(t, c, interceptors.Registration{Plugin: "rewriter", Stage: events.StageToolBefore, Tools: "calculator"},
		func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			var p events.ToolBefore
			if err := req.Event.DecodeData(&p); err != nil {
				return nil, err
			}
			p.Call.Arguments = json.RawMessage(`{"expression":"6*9"}`)
			return interceptors.Replace(p)
		})
	register(t, c, interceptors.Registration{Plugin: "auditor", Stage: events.StageToolAfter, Tools: "calculator"},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Allow, Context: "checked by the auditor"}, nil
		})
	register(t, c, interceptors.Registration{Plugin: "signer", Stage: events.StageModelResponded, Builtin: true},
		func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			var p events.ModelResponded
			if err := req.Event.DecodeData(&p); err != nil {
				return nil, err
			}
			if len(p.Message.ToolCalls) > 0 {
				return nil, nil
			}
			p.Message.Content += " (reviewed)"
			return interceptors.Replace(p)
		})
	return c
}

// auditHooks adds context to every tool result on tool.after.
func auditHooks(t *testing.T) *interceptors.Chain {
	c := interceptors.NewChain()
	register(t, c, interceptors.Registration{Plugin: "auditor", Stage: events.StageToolAfter},
		func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Allow, Context: "audited"}, nil
		})
	return c
}

// request is a new run of the scenario's session.
func (sc *historyScenario) request(prompt string) *events.RunRequest {
	return &events.RunRequest{RunID: events.NewID(), AgentID: historyAgent, SessionID: sc.name, Prompt: prompt}
}

// engine returns an engine of the scenario's agent on j (see build).
func (sc *historyScenario) engine(t *testing.T, j *looptest.Journal, cfg loop.Config) *loop.Engine {
	t.Helper()
	return sc.build(t, j, cfg, nil, nil)[historyAgent]
}

// build returns the engines of the scenario on j, by agent id: its
// agent's, with cfg (the scenario's model and the demo's tools where cfg
// leaves them unset, then sc.config), and, when it has sub-agents, one
// for each (its script, the demo's tools, cfg's hooks; child, when set,
// changes its config), in a team. With log set (a replay), every model
// and tool records in it what it is asked.
func (sc *historyScenario) build(t *testing.T, j *looptest.Journal, cfg loop.Config, log *replayLog, child func(*loop.Config)) map[string]*loop.Engine {
	t.Helper()
	if cfg.Model == nil {
		cfg.Model = scripted.New(sc.script)
	}
	if cfg.Tools == nil {
		cfg.Tools = (&toolbox{log: log}).tools()
	}
	if sc.config != nil {
		sc.config(&cfg)
	}
	if log != nil {
		cfg.Model = &askedModel{inner: cfg.Model, log: log}
	}
	out := map[string]*loop.Engine{}
	if len(sc.subagents) > 0 {
		cfg.Team = loop.NewTeam()
		for _, s := range sc.subagents {
			cfg.Subagents = append(cfg.Subagents, loop.Subagent{ID: s.id, Description: s.description})
			cc := loop.Config{Hooks: cfg.Hooks, Model: scripted.New(s.script), Tools: (&toolbox{agent: s.id, log: log}).tools()}
			if log != nil {
				cc.Model = &askedModel{inner: cc.Model, agent: s.id, log: log}
			}
			if child != nil {
				child(&cc)
			}
			out[s.id] = newEngine(t, j, cc)
			cfg.Team.Add(s.id, out[s.id])
		}
	}
	out[historyAgent] = newEngine(t, j, cfg)
	if cfg.Team != nil {
		cfg.Team.Add(historyAgent, out[historyAgent])
	}
	return out
}

// mustRun runs prompt as a new run of the session and checks how it ended.
func (sc *historyScenario) mustRun(t *testing.T, j *looptest.Journal, cfg loop.Config, prompt, reason string) {
	t.Helper()
	res, err := sc.engine(t, j, cfg).Run(ctxT(t), sc.request(prompt))
	if err != nil || res.Reason != reason {
		t.Fatalf("run %q: %+v, %v; want %s", prompt, res, err, reason)
	}
}

// cut runs req with an emitter that fails every append after the first
// limit (a worker that lost its connection), and checks that exactly limit
// events were stored and the run was not ended.
func (sc *historyScenario) cut(t *testing.T, j *looptest.Journal, cfg loop.Config, req *events.RunRequest, limit int) {
	t.Helper()
	before := len(j.Events())
	cfg.Emitter = &failingEmitter{inner: j, limit: limit}
	res, err := sc.engine(t, j, cfg).Run(ctxT(t), req)
	if !errors.Is(err, loop.ErrUnrecorded) || res != nil && res.Ended {
		t.Fatalf("cut attempt: %+v, %v; want it not ended (ErrUnrecorded)", res, err)
	}
	if n := len(j.Events()) - before; n != limit {
		t.Fatalf("the cut attempt stored %d events, want %d", n, limit)
	}
}
