package webui_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
	"github.com/hookbus/hookbus/webui"
)

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// serve starts the page over b.
func serve(t *testing.T, b *bus.Bus, allow bool) *httptest.Server {
	t.Helper()
	return serveTrusting(t, b, allow, nil)
}

// serveTrusting starts the page over b, trusting the signatures of trust.
func serveTrusting(t *testing.T, b *bus.Bus, allow bool, trust map[string]bool) *httptest.Server {
	t.Helper()
	return serveGuarded(t, webui.Config{Bus: b, AllowApprovals: allow, Trust: trust}, httpauth.Config{})
}

// serveGuarded starts the page of cfg behind the listener's guard, as
// observer ui serves it: on loopback, with guard's authentication (none:
// every caller is the local user).
func serveGuarded(t *testing.T, cfg webui.Config, guard httpauth.Config) *httptest.Server {
	t.Helper()
	cfg.Where, cfg.AnswerWait = "embedded test server", 30*time.Second
	srv, err := webui.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(nil)
	guard.Name, guard.Addr, guard.Login = "observer ui", hs.Listener.Addr(), true
	g, err := httpauth.New(guard)
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = g.Wrap(srv)
	hs.Start()
	t.Cleanup(hs.Close)
	return hs
}

// policy is the set of hooks of the recorded runs: audit-log allows every
// tool call, sandbox rewrites the calculator's expression, guard denies
// the shell's rm -rf.
func policy(t *testing.T) *interceptors.Chain {
	t.Helper()
	c := interceptors.NewChain()
	must := func(_ any, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Register(interceptors.Registration{Plugin: "audit-log", Stage: events.StageToolBefore, Order: 1},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Allow}, nil
		})))
	must(c.Register(interceptors.Registration{Plugin: "sandbox", Stage: events.StageToolBefore, Tools: "calculator", Order: 2},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Modify, Reason: "round numbers only",
				Patch: []interceptors.PatchOp{{Op: "replace", Path: "/call/arguments/expression", Value: json.RawMessage(`"6*7"`)}}}, nil
		})))
	must(c.Register(interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Tools: "shell", Order: 3},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "rm -rf is not allowed on this host"}, nil
		})))
	return c
}

func shell() loop.Tool {
	return loop.ToolFunc(events.ToolSpec{Name: "shell", Description: "runs a command"}, func(context.Context, json.RawMessage) (string, error) {
		return "ran", nil
	})
}

func clock() loop.Tool {
	return loop.ToolFunc(events.ToolSpec{Name: "clock"}, func(context.Context, json.RawMessage) (string, error) { return "12:00", nil })
}

// recordRun runs a planner that checks the clock, works out a sum (the
// sandbox rewrites it), tries rm -rf (the guard denies it), then asks a
// helper sub-agent, on b; it returns the parent's result.
func recordRun(t *testing.T, ctx context.Context, b *bus.Bus, session string) *loop.Result {
	t.Helper()
	return recordSignedRun(t, ctx, b, session, nil)
}

// recordSignedRun is recordRun with the runs' ends signed by signer.
func recordSignedRun(t *testing.T, ctx context.Context, b *bus.Bus, session string, signer loop.Signer) *loop.Result {
	t.Helper()
	team := loop.NewTeam()
	hooks := policy(t)
	helper, err := loop.New(loop.Config{Emitter: b, History: b, Hooks: hooks, Signer: signer, Tools: []loop.Tool{tools.Calculator()},
		Model: scripted.New(&scripted.Script{Replies: []scripted.Reply{
			{Content: "Working it out.", ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+2"}`)}}},
			{Content: "It is {{tool:calculator}}."},
		}})})
	if err != nil {
		t.Fatal(err)
	}
	task, _ := json.Marshal(map[string]string{"description": "check a sum", "prompt": "what is 2+2?", "subagent_type": "helper"})
	planner, err := loop.New(loop.Config{Emitter: b, History: b, Hooks: hooks, Signer: signer, Team: team, Subagents: []loop.Subagent{{ID: "helper", Description: "does sums"}},
		Worker: &events.Worker{Name: "build-7:4242", Host: "build-7"}, Definition: definition("planner", "3"),
		Tools: []loop.Tool{clock(), tools.Calculator(), shell()},
		Model: scripted.New(&scripted.Script{Replies: []scripted.Reply{
			{Content: "Let me check the clock, work out the sum and clean up.", ToolCalls: []scripted.ToolCall{
				{Name: "clock", Arguments: json.RawMessage(`{}`)},
				{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7.5"}`)},
				{Name: "shell", Arguments: json.RawMessage(`{"command":"rm -rf /var/data"}`)},
			}},
			{Content: "Let me ask the helper to double-check.", ToolCalls: []scripted.ToolCall{{Name: loop.TaskTool, Arguments: task}}},
			{Content: "It is {{tool:clock}}; 6*7 = {{tool:calculator}}; the helper says {{tool:Task}}"},
		}})})
	if err != nil {
		t.Fatal(err)
	}
	team.Add("helper", helper)
	team.Add("planner", planner)
	res, err := planner.Run(ctx, &events.RunRequest{AgentID: "planner", SessionID: session, Prompt: "What time is it, and what is 6*7?"})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("run: %+v, %v", res, err)
	}
	return res
}

// definition is a definition of agent at version, its digest made up.
func definition(agent, version string) events.Definition {
	sum := sha256.Sum256([]byte(agent + "@" + version))
	return events.Definition{Name: agent, Version: version, Digest: hex.EncodeToString(sum[:])}
}

// stagesOf replays a run's stages in stream order.
func stagesOf(t *testing.T, ctx context.Context, b *bus.Bus, run string) []string {
	t.Helper()
	var out []string
	if _, err := b.Replay(ctx, bus.Filter{Run: run}, func(e *events.Event) error { out = append(out, string(e.Stage)); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// startWorker runs agent "ops" (its calculator calls wait for a human) on
// the run queue of b until the test ends.
func startWorker(t *testing.T, b *bus.Bus) {
	t.Helper()
	eng, err := loop.New(loop.Config{Emitter: b, History: b, Queue: runs.New(b), Tools: []loop.Tool{clock(), tools.Calculator()}, Model: scripted.New(nil),
		Worker: &events.Worker{Name: "ops-1:311", Host: "ops-1"},
		Approval: loop.Approval{Expiry: time.Hour, Required: func(c events.ToolCall) string {
			if c.Name == "calculator" {
				return "maths needs a second pair of eyes"
			}
			return ""
		}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := loop.NewWorker(eng, nil) // one worker: no run is lost to another, nor recorded on another definition
	rc, err := runs.New(b).Consume(ctx, runs.ConsumerConfig{Agents: runs.Agents("ops")}, func(ctx context.Context, r *events.RunRequest) (runs.Outcome, error) {
		return runs.Outcome{}, w.Handle(ctx, r)
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	// What loop serve runs beside: the observer of answers that resumes
	// the runs once every approval of their step is answered.
	rs := &loop.Resumer{History: b, Recorder: b, Queue: runs.New(b)}
	o, err := b.Observe(ctx, bus.ObserveConfig{Durable: "hookbus-resume-ops", Agent: "ops", Stages: []events.Stage{events.StageApprovalResolved}, MaxDeliver: -1}, rs.Resolved)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); rc.Stop(); o.Stop() })
}

// waitStage polls the stream until run has an event of stage.
func waitStage(t *testing.T, ctx context.Context, b *bus.Bus, run string, st events.Stage) {
	t.Helper()
	bustest.Eventuallyf(t, 30*time.Second, func() bool {
		for _, s := range stagesOf(t, ctx, b, run) {
			if s == string(st) {
				return true
			}
		}
		return false
	}, "run %s to record %s", run, st)
}
