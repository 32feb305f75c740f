package telemetry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/telemetry"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads the metrics a handler serves, as Prometheus does.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the scrape: %v", err)
	}
	return fams
}

// value is the value of the metric of family name with exactly labels
// (a histogram's count); -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(labels)/2 {
			continue
		}
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// A worker's metrics, fed by what its engines append, after the team's run.
func TestMetricsOfARun(t *testing.T) {
	ctx := ctxT(t)
	srv, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	svc, err := remote.Serve(ctx, bustest.Conn(t, srv), remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no clocks today"}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	m := telemetry.NewMetrics()
	runTeam(t, ctx, b, m.Emitter(b), "s1")

	// A request that waited two seconds in the queue.
	handled := false
	h := m.RunHandler(func(context.Context, *events.RunRequest) (runs.Outcome, error) {
		handled = true
		return runs.Outcome{}, nil
	})
	if _, err := h(ctx, &events.RunRequest{RunID: "r", AgentID: "a", SessionID: "s", Prompt: "p", SubmittedAt: time.Now().Add(-2 * time.Second)}); err != nil || !handled {
		t.Fatalf("run handler: %v, handled %v", err, handled)
	}

	fams := scrape(t, m.Handler())
	for _, c := range []struct {
		want   float64
		name   string
		labels []string
	}{
		{1, "hookbus_runs_started_total", []string{"agent", "planner"}},
		{1, "hookbus_runs_started_total", []string{"agent", "helper"}},
		{1, "hookbus_runs_ended_total", []string{"agent", "planner", "reason", "done"}},
		{1, "hookbus_runs_ended_total", []string{"agent", "helper", "reason", "done"}},
		{3, "hookbus_step_duration_seconds", []string{"agent", "planner"}},
		{2, "hookbus_step_duration_seconds", []string{"agent", "helper"}},
		{3, "hookbus_model_call_duration_seconds", []string{"agent", "planner", "provider", "scripted", "outcome", "ok"}},
		{1, "hookbus_tool_call_duration_seconds", []string{"agent", "planner", "tool", "calculator", "outcome", "ok"}},
		{1, "hookbus_tool_call_duration_seconds", []string{"agent", "planner", "tool", "clock", "outcome", "denied"}},
		{1, "hookbus_tool_call_duration_seconds", []string{"agent", "planner", "tool", "Task", "outcome", "ok"}},
		{1, "hookbus_tool_call_duration_seconds", []string{"agent", "helper", "tool", "calculator", "outcome", "ok"}},
		{1, "hookbus_interceptor_duration_seconds", []string{"plugin", "guard", "stage", "tool.before", "decision", "deny"}},
		{2, "hookbus_interceptor_duration_seconds", []string{"plugin", "ghost", "stage", "tool.after", "decision", "failed"}},
		{2, "hookbus_interceptor_failures_total", []string{"plugin", "ghost", "stage", "tool.after", "kind", "no_responders"}},
		{2, "hookbus_publish_duration_seconds", []string{"op", "claim"}},
		{1, "hookbus_run_queue_lag_seconds", nil},
		{0, "hookbus_approvals_pending", nil},
	} {
		if got := value(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := fams["hookbus_run_queue_lag_seconds"].Metric[0].Histogram.GetSampleSum(); got < 2 {
		t.Errorf("queue lag sum %v, want at least 2s", got)
	}
	if value(fams, "hookbus_publish_duration_seconds", "op", "append_sync") < 1 || value(fams, "hookbus_publish_duration_seconds", "op", "flush") < 1 {
		t.Errorf("publish: %v", fams["hookbus_publish_duration_seconds"])
	}

	// The tokens are those the record holds, to the token; no run is in
	// flight once both ended.
	tokens := map[string]float64{}
	if _, err := b.Replay(ctx, bus.Filter{Stages: []events.Stage{events.StageModelResponded}}, func(e *events.Event) error {
		var p events.ModelResponded
		if err := e.DecodeData(&p); err != nil {
			return err
		}
		tokens[e.AgentID+" input"] += float64(p.Usage.InputTokens)
		tokens[e.AgentID+" output"] += float64(p.Usage.OutputTokens)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"planner", "helper"} {
		for _, typ := range []string{"input", "output"} {
			want := tokens[agent+" "+typ]
			if got := value(fams, "hookbus_model_tokens_total", "agent", agent, "provider", "scripted", "model", "scripted:"+agent, "type", typ); got != want || want == 0 {
				t.Errorf("%s %s tokens = %v, want %v (the record's)", agent, typ, got, want)
			}
		}
		if got := value(fams, "hookbus_runs_in_flight", "agent", agent); got != 0 {
			t.Errorf("%s runs in flight after the run = %v, want 0", agent, got)
		}
	}
}

// Approvals pending follow approval.requested, approval.resolved and the
// run's end.
func TestMetricsApprovalsPending(t *testing.T) {
	m := telemetry.NewMetrics()
	ev := func(st events.Stage, run string, p any) *events.Event {
		e, err := events.New(st, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: run}, p)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for i, call := range []string{"c1", "c2"} {
		m.Observe(ev(events.StageApprovalRequested, "r1", events.ApprovalRequested{Call: events.ToolCall{ID: call, Name: "Bash"}}))
		if got := value(scrape(t, m.Handler()), "hookbus_approvals_pending"); got != float64(i+1) {
			t.Fatalf("after %d requests: %v pending", i+1, got)
		}
	}
	m.Observe(ev(events.StageApprovalResolved, "r1", events.ApprovalResolved{CallID: "c1", Action: events.ActionApprove}))
	if got := value(scrape(t, m.Handler()), "hookbus_approvals_pending"); got != 1 {
		t.Fatalf("after an answer: %v pending", got)
	}
	m.Observe(ev(events.StageRunCompleted, "r1", events.RunCompleted{Reason: events.ReasonDone}))
	if got := value(scrape(t, m.Handler()), "hookbus_approvals_pending"); got != 0 {
		t.Fatalf("after the run's end: %v pending", got)
	}
}

// Approvals pending are what waits by the record's rule (record.Run), the
// one the page and the answer hold to: a call whose tool.after is recorded
// without an answer (a coding agent's user answered in its terminal), or
// that was asked in a step since completed, waits for nothing.
func TestMetricsApprovalsPendingSettled(t *testing.T) {
	m := telemetry.NewMetrics()
	ev := func(st events.Stage, step int, p any) *events.Event {
		e, err := events.New(st, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: "r", Step: step}, p)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	c1, c2 := events.ToolCall{ID: "c1", Name: "Bash"}, events.ToolCall{ID: "c2", Name: "Bash"}
	for _, e := range []*events.Event{
		ev(events.StageApprovalRequested, 0, events.ApprovalRequested{Call: c1}),
		ev(events.StageToolAfter, 0, events.ToolAfter{Call: c1}),
		ev(events.StageApprovalRequested, 1, events.ApprovalRequested{Call: c2}),
		ev(events.StageStepCompleted, 1, events.StepCompleted{Step: 1}),
	} {
		m.Observe(e)
	}
	if got := value(scrape(t, m.Handler()), "hookbus_approvals_pending"); got != 0 {
		t.Fatalf("%v pending, want 0: one call done, the other of a completed step", got)
	}
}

func ExampleMetrics() {
	m := telemetry.NewMetrics()
	e, _ := events.New(events.StageRunStarted, events.Meta{Source: "example", AgentID: "demo", SessionID: "s", RunID: "r"}, events.RunStarted{Prompt: "hi"})
	m.Observe(e)
	fams, _ := m.Registry().Gather()
	for _, f := range fams {
		if f.GetName() == "hookbus_runs_started_total" {
			fmt.Println(f.GetName(), f.Metric[0].Label[0].GetValue(), f.Metric[0].Counter.GetValue())
		}
	}
	// Output: hookbus_runs_started_total demo 1
}

// Tokens and cost add up what each model.responded reports, by agent,
// provider, model and type; a model without prices adds no cost.
func TestMetricsTokensAndCost(t *testing.T) {
	m := telemetry.NewMetrics()
	ev := func(agent string, p events.ModelResponded) *events.Event {
		e, err := events.New(events.StageModelResponded, events.Meta{Source: "test", AgentID: agent, SessionID: "s", RunID: "r-" + agent}, p)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	reply := events.Message{Role: events.RoleAssistant, Content: "ok"}
	m.Observe(ev("a", events.ModelResponded{Message: reply, Provider: "openai", Model: "gpt-4o", Usage: events.Usage{InputTokens: 100, OutputTokens: 7, CostUSD: 0.25}}))
	m.Observe(ev("a", events.ModelResponded{Message: reply, Provider: "openai", Model: "gpt-4o", Usage: events.Usage{InputTokens: 50, OutputTokens: 3, CostUSD: 0.125}}))
	m.Observe(ev("b", events.ModelResponded{Message: reply, Provider: "anthropic", Model: "claude", Usage: events.Usage{InputTokens: 9, OutputTokens: 1}}))
	fams := scrape(t, m.Handler())
	for _, c := range []struct {
		want   float64
		name   string
		labels []string
	}{
		{150, "hookbus_model_tokens_total", []string{"agent", "a", "provider", "openai", "model", "gpt-4o", "type", "input"}},
		{10, "hookbus_model_tokens_total", []string{"agent", "a", "provider", "openai", "model", "gpt-4o", "type", "output"}},
		{9, "hookbus_model_tokens_total", []string{"agent", "b", "provider", "anthropic", "model", "claude", "type", "input"}},
		{1, "hookbus_model_tokens_total", []string{"agent", "b", "provider", "anthropic", "model", "claude", "type", "output"}},
		{0.375, "hookbus_model_cost_usd_total", []string{"agent", "a", "provider", "openai", "model", "gpt-4o"}},
		{-1, "hookbus_model_cost_usd_total", []string{"agent", "b", "provider", "anthropic", "model", "claude"}},
	} {
		if got := value(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// A run is in flight from its run.started to its end, to the approval it
// waits for, or (in a worker) to the end of its attempt; a resumed
// attempt counts it again, once.
func TestMetricsRunsInFlight(t *testing.T) {
	ctx := ctxT(t)
	m := telemetry.NewMetrics()
	ev := func(st events.Stage, agent, run string, p any) *events.Event {
		e, err := events.New(st, events.Meta{Source: "test", AgentID: agent, SessionID: "s-" + run, RunID: run}, p)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	want := func(step string, a, b float64) {
		t.Helper()
		fams := scrape(t, m.Handler())
		if got := value(fams, "hookbus_runs_in_flight", "agent", "a"); got != a {
			t.Errorf("%s: in flight for a = %v, want %v", step, got, a)
		}
		if got := value(fams, "hookbus_runs_in_flight", "agent", "b"); got != b {
			t.Errorf("%s: in flight for b = %v, want %v", step, got, b)
		}
	}
	m.Observe(ev(events.StageRunStarted, "a", "r1", events.RunStarted{Prompt: "p"}))
	m.Observe(ev(events.StageRunStarted, "b", "r3", events.RunStarted{Prompt: "p"}))
	want("two runs started", 1, 1)

	// r2 is a worker's attempt: it ends with its handler, without an end
	// event (NATS went away; the run goes back to the queue).
	started := make(chan struct{})
	release := make(chan struct{})
	h := m.RunHandler(func(context.Context, *events.RunRequest) (runs.Outcome, error) {
		m.Observe(ev(events.StageRunStarted, "a", "r2", events.RunStarted{Prompt: "p"}))
		close(started)
		<-release
		return runs.Outcome{}, nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := h(ctx, &events.RunRequest{RunID: "r2", AgentID: "a", SessionID: "s-r2", Prompt: "p"})
		done <- err
	}()
	<-started
	want("a worker's attempt under way", 2, 1)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want("the attempt returned", 1, 1)

	m.Observe(ev(events.StageApprovalRequested, "a", "r1", events.ApprovalRequested{Call: events.ToolCall{ID: "c1", Name: "Bash"}}))
	want("r1 waits for a human", 0, 1)
	m.Observe(ev(events.StageApprovalResolved, "a", "r1", events.ApprovalResolved{CallID: "c1", Action: events.ActionApprove}))
	m.Observe(ev(events.StageRunStarted, "a", "r1", events.RunStarted{Prompt: "p", Resumed: true}))
	m.Observe(ev(events.StageRunStarted, "a", "r1", events.RunStarted{Prompt: "p", Resumed: true}))
	want("r1 resumed (two attempt starts seen)", 1, 1)
	m.Observe(ev(events.StageRunCompleted, "a", "r1", events.RunCompleted{Reason: events.ReasonDone}))
	m.Observe(ev(events.StageRunFailed, "b", "r3", events.RunFailed{Error: "boom"}))
	want("both ended", 0, 0)
	m.Observe(ev(events.StageRunCompleted, "a", "r1", events.RunCompleted{Reason: events.ReasonDone}))
	want("an end seen twice", 0, 0)
	if got := value(scrape(t, m.Handler()), "hookbus_runs_started_total", "agent", "a"); got != 2 {
		t.Errorf("runs started for a = %v, want 2 (resumed attempts are not runs)", got)
	}
}

// hookbus_build_info says what the process runs, once, with value 1.
func TestMetricsBuildInfo(t *testing.T) {
	b := telemetry.ReadBuild()
	if b.GoVersion != runtime.Version() || b.Version == "" {
		t.Fatalf("ReadBuild = %+v", b)
	}
	fams := scrape(t, telemetry.NewMetrics().Handler())
	f := fams["hookbus_build_info"]
	if f == nil || len(f.Metric) != 1 {
		t.Fatalf("hookbus_build_info: %v", f)
	}
	labels := map[string]string{}
	for _, l := range f.Metric[0].Label {
		labels[l.GetName()] = l.GetValue()
	}
	rev := b.Revision
	if b.Modified && rev != "" {
		rev += "-modified"
	}
	if f.Metric[0].Gauge.GetValue() != 1 || labels["version"] != b.Version || labels["revision"] != rev || labels["goversion"] != runtime.Version() || len(labels) != 3 {
		t.Errorf("hookbus_build_info %v = %v, want version %q revision %q goversion %q, value 1", labels, f.Metric[0].Gauge.GetValue(), b.Version, rev, runtime.Version())
	}
	if s := b.String(); !strings.HasPrefix(s, b.Version) || !strings.HasSuffix(s, runtime.Version()) {
		t.Errorf("Build.String() = %q", s)
	}
}
