package telemetry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
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
	h := m.RunHandler(func(context.Context, *events.RunRequest) error { handled = true; return nil })
	if err := h(ctx, &events.RunRequest{RunID: "r", AgentID: "a", SessionID: "s", Prompt: "p", SubmittedAt: time.Now().Add(-2 * time.Second)}); err != nil || !handled {
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
