package telemetry

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are hookbus' Prometheus metrics, fed by events: what a worker
// appends (Emitter), what an observer reads (Handle), or any event given
// to Observe. Each Metrics has its own registry (no global state); Handler
// serves it. The metric names are in docs/OPERATIONS.md's table.
type Metrics struct {
	reg *prometheus.Registry

	runsStarted  *prometheus.CounterVec
	runsEnded    *prometheus.CounterVec
	steps        *prometheus.HistogramVec
	modelCalls   *prometheus.HistogramVec
	toolCalls    *prometheus.HistogramVec
	hookCalls    *prometheus.HistogramVec
	hookFailures *prometheus.CounterVec
	publish      *prometheus.HistogramVec
	queueLag     prometheus.Histogram
	events       *prometheus.CounterVec
	tokens       *prometheus.CounterVec
	cost         *prometheus.CounterVec
	inFlight     *prometheus.GaugeVec

	mu        sync.Mutex
	open      map[string]*runClock   // by run id
	approvals map[string]*record.Run // by run id, from its first approval.requested
	following bool                   // FollowApprovals folds the approvals, Observe does not
	running   map[string]string      // agent by run id: the runs in flight
}

// runClock is when a run's open steps, model calls and tool calls started.
type runClock struct {
	steps map[int]time.Time
	chats map[int]time.Time
	tools map[string]time.Time
}

// Buckets of the latency histograms, in seconds: from a millisecond (an
// in-process hook, a publish) to ten minutes (a long model call or tool).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// NewMetrics returns metrics registered on a registry of their own, with
// hookbus_build_info (ReadBuild) and the Go runtime and process
// collectors.
func NewMetrics() *Metrics {
	h := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets}, labels)
	}
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		reg:          prometheus.NewRegistry(),
		runsStarted:  c("hookbus_runs_started_total", "Runs started (a run's first run.started; resumed attempts are not counted).", "agent"),
		runsEnded:    c("hookbus_runs_ended_total", "Runs ended, by reason (run.completed's: done, denied, stopped, rejected, max_steps, cost_limit, interrupted; failed for run.failed).", "agent", "reason"),
		steps:        h("hookbus_step_duration_seconds", "Steps, from step.started to step.completed.", "agent"),
		modelCalls:   h("hookbus_model_call_duration_seconds", "Model calls, from context.assembled to model.responded (outcome ok) or the model.failed that ends the call (outcome failed); retries included.", "agent", "provider", "outcome"),
		toolCalls:    h("hookbus_tool_call_duration_seconds", "Tool calls, from tool.before to tool.after (hooks and approvals included), by outcome: ok, error, denied, mocked.", "agent", "tool", "outcome"),
		hookCalls:    h("hookbus_interceptor_duration_seconds", "Interceptor calls, as hook.decided and hook.failed record them (decision failed for a failure).", "plugin", "stage", "decision"),
		hookFailures: c("hookbus_interceptor_failures_total", "Interceptor failures (hook.failed), by kind: timeout, no_responders, bad_reply, error, panic.", "plugin", "stage", "kind"),
		publish:      h("hookbus_publish_duration_seconds", "Event appends a worker waited for: a write-ahead append (append_sync), a claim, a flush of the asynchronous appends.", "op"),
		queueLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hookbus_run_queue_lag_seconds",
			Help: "Run requests, from submission to a worker taking them.", Buckets: latencyBuckets}),
		events: c("hookbus_events_total", "Events seen, by stage.", "stage"),
		tokens: c("hookbus_model_tokens_total", "Model tokens, as each model.responded reports them, by type: input (read) or output (written).", "agent", "provider", "model", "type"),
		cost:   c("hookbus_model_cost_usd_total", "What model calls cost, in US dollars, at the prices of the agent's definition (calls of models without prices add nothing).", "agent", "provider", "model"),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "hookbus_runs_in_flight",
			Help: "Runs under way: from a run.started to the run's end, to an approval.requested (the run then waits for a human), or, in a worker, to the end of its attempt."}, []string{"agent"}),
		open:      map[string]*runClock{},
		approvals: map[string]*record.Run{},
		running:   map[string]string{},
	}
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hookbus_approvals_pending",
		Help: "Tool calls waiting for a human's answer."}, m.pendingApprovals)
	m.reg.MustRegister(m.runsStarted, m.runsEnded, m.steps, m.modelCalls, m.toolCalls, m.hookCalls,
		m.hookFailures, m.publish, m.queueLag, m.events, pending, m.tokens, m.cost, m.inFlight,
		BuildInfoCollector(ReadBuild()), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the metrics' registry.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Handle is Observe as a bus.EventHandler, for an observer.
func (m *Metrics) Handle(_ context.Context, e *events.Event) error {
	m.Observe(e)
	return nil
}

// ObserveQueueLag records how long a run request waited in the queue.
func (m *Metrics) ObserveQueueLag(d time.Duration) { m.queueLag.Observe(max(d, 0).Seconds()) }

// ObservePublish records how long an append of kind op took.
func (m *Metrics) ObservePublish(op string, d time.Duration) {
	m.publish.WithLabelValues(op).Observe(d.Seconds())
}

func (m *Metrics) pendingApprovals() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.approvals {
		n += len(r.Waiting())
	}
	return float64(n)
}

func (m *Metrics) clock(run string) *runClock {
	c := m.open[run]
	if c == nil {
		c = &runClock{steps: map[int]time.Time{}, chats: map[int]time.Time{}, tools: map[string]time.Time{}}
		m.open[run] = c
	}
	return c
}

// Observe counts one event. Durations are measured between events of one
// run seen by this Metrics (an end whose start it did not see is not
// measured); an event whose payload does not decode counts only in
// hookbus_events_total.
func (m *Metrics) Observe(e *events.Event) {
	m.events.WithLabelValues(string(e.Stage)).Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.following {
		m.foldApproval(e)
	}
	switch e.Stage {
	case events.StageRunStarted:
		if p, err := events.Data[events.RunStarted](e); err == nil && !p.Resumed {
			m.runsStarted.WithLabelValues(e.AgentID).Inc()
		}
		m.startRun(e.RunID, e.AgentID)
	case events.StageStepStarted:
		m.clock(e.RunID).steps[e.Step] = e.Time
	case events.StageStepCompleted:
		if c := m.open[e.RunID]; c != nil {
			if t, ok := c.steps[e.Step]; ok {
				m.steps.WithLabelValues(e.AgentID).Observe(e.Time.Sub(t).Seconds())
				delete(c.steps, e.Step)
			}
		}
	case events.StageContextAssembled:
		m.clock(e.RunID).chats[e.Step] = e.Time
	case events.StageModelResponded:
		if p, err := events.Data[events.ModelResponded](e); err == nil {
			m.endChat(e, p.Provider, "ok")
			m.tokens.WithLabelValues(e.AgentID, p.Provider, p.Model, "input").Add(float64(max(p.Usage.InputTokens, 0)))
			m.tokens.WithLabelValues(e.AgentID, p.Provider, p.Model, "output").Add(float64(max(p.Usage.OutputTokens, 0)))
			if p.Usage.CostUSD > 0 {
				m.cost.WithLabelValues(e.AgentID, p.Provider, p.Model).Add(p.Usage.CostUSD)
			}
		}
	case events.StageModelFailed:
		if p, err := events.Data[events.ModelFailed](e); err == nil && p.RetryInMS == 0 {
			m.endChat(e, p.Provider, "failed")
		}
	case events.StageToolBefore:
		if p, err := events.Data[events.ToolBefore](e); err == nil {
			if _, ok := m.clock(e.RunID).tools[p.Call.ID]; !ok {
				m.open[e.RunID].tools[p.Call.ID] = e.Time
			}
		}
	case events.StageToolAfter:
		if p, err := events.Data[events.ToolAfter](e); err == nil {
			m.endTool(e, &p)
		}
	case events.StageHookDecided:
		if p, err := events.Data[events.HookDecided](e); err == nil {
			m.hookCalls.WithLabelValues(p.Plugin, string(p.Stage), p.Decision).Observe(float64(p.LatencyUS) / 1e6)
		}
	case events.StageHookFailed:
		if p, err := events.Data[events.HookFailed](e); err == nil {
			m.hookCalls.WithLabelValues(p.Plugin, string(p.Stage), "failed").Observe(float64(p.LatencyUS) / 1e6)
			m.hookFailures.WithLabelValues(p.Plugin, string(p.Stage), p.Kind).Inc()
		}
	case events.StageApprovalRequested:
		m.stopRun(e.RunID)
	case events.StageRunCompleted, events.StageRunFailed:
		if e.Stage == events.StageRunFailed {
			m.runsEnded.WithLabelValues(e.AgentID, "failed").Inc()
		} else if p, err := events.Data[events.RunCompleted](e); err == nil {
			m.runsEnded.WithLabelValues(e.AgentID, p.Reason).Inc()
		}
		delete(m.open, e.RunID)
		delete(m.approvals, e.RunID)
		m.stopRun(e.RunID)
	}
}

// startRun counts a run in flight (once, whatever its attempts); m.mu is
// held.
func (m *Metrics) startRun(run, agent string) {
	if _, ok := m.running[run]; ok {
		return
	}
	m.running[run] = agent
	m.inFlight.WithLabelValues(agent).Inc()
}

// stopRun counts a run out of flight; m.mu is held.
func (m *Metrics) stopRun(run string) {
	agent, ok := m.running[run]
	if !ok {
		return
	}
	delete(m.running, run)
	m.inFlight.WithLabelValues(agent).Dec()
}

func (m *Metrics) endChat(e *events.Event, provider, outcome string) {
	c := m.open[e.RunID]
	if c == nil {
		return
	}
	if t, ok := c.chats[e.Step]; ok {
		m.modelCalls.WithLabelValues(e.AgentID, provider, outcome).Observe(e.Time.Sub(t).Seconds())
		delete(c.chats, e.Step)
	}
}

func (m *Metrics) endTool(e *events.Event, p *events.ToolAfter) {
	c := m.open[e.RunID]
	if c == nil {
		return
	}
	t, ok := c.tools[p.Call.ID]
	if !ok {
		return
	}
	outcome := "ok"
	switch {
	case p.Result.Mocked:
		outcome = "mocked"
	case p.Result.IsError && strings.HasPrefix(p.Result.Content, "denied: "):
		outcome = "denied"
	case p.Result.IsError:
		outcome = "error"
	}
	m.toolCalls.WithLabelValues(e.AgentID, p.Call.Name, outcome).Observe(e.Time.Sub(t).Seconds())
	delete(c.tools, p.Call.ID)
}
