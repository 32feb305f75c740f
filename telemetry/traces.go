package telemetry

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/events/tracectx"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Lookup reads a run's events back: Traces asks it for the start of a
// span whose start it has not seen (it was handled before a restart).
// *bus.Bus implements it.
type Lookup interface {
	Replay(ctx context.Context, f bus.Filter, fn func(*events.Event) error) (bus.ReplayStats, error)
}

// TracesConfig configures Traces.
type TracesConfig struct {
	// Exporter sends the spans (required): otlptracehttp's, or any
	// OpenTelemetry SpanExporter. Handle returns its errors.
	Exporter sdktrace.SpanExporter
	// Lookup reads a run's events when a span's start is not in memory;
	// nil: such a span starts at its end.
	Lookup Lookup
	// ServiceName is the resource's service.name (default "hookbus"),
	// when Resource is nil.
	ServiceName string
	// Resource describes who sends the spans; nil: a resource with
	// service.name ServiceName only. Resource builds one the
	// OpenTelemetry way (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
	Resource *resource.Resource
	// CaptureContent records the conversation on the spans, as the GenAI
	// conventions define it: gen_ai.input.messages (what the model was
	// given) and gen_ai.output.messages (its reply) on each chat span,
	// gen_ai.tool.call.arguments and gen_ai.tool.call.result on each tool
	// span. Off by default: prompts, answers and tool output often hold
	// personal or secret data, and the trace backend then holds them too.
	CaptureContent bool
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Traces turns recorded events into OpenTelemetry spans following the
// GenAI semantic conventions (see doc.go). Its Handle is a bus.EventHandler
// for a durable observer: it returns once the spans an event ends are
// exported, so the event is acknowledged only then. It is safe for
// concurrent use (events are handled one at a time).
type Traces struct {
	cfg    TracesConfig
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	col    *collector

	mu   sync.Mutex
	runs map[string]*openRun
}

// openRun is what Traces remembers of a run until it ends: the starts of
// its open spans.
type openRun struct {
	start    time.Time
	parent   string // the run.started's parent_traceparent
	hasStart bool   // a run.started was seen (parent is known)
	chats    map[int]*openChat
	tools    map[string]time.Time
	recalled bool // the run's events were read back once
}

type openChat struct {
	start   time.Time
	retries []*events.Event  // model.failed events of retried attempts
	input   []events.Message // with CaptureContent: what the model was given
}

// NewTraces returns a Traces exporting to cfg.Exporter. It returns an
// error wrapping ErrInvalidConfig without an exporter.
func NewTraces(cfg TracesConfig) (*Traces, error) {
	if cfg.Exporter == nil {
		return nil, fmt.Errorf("%w: no span exporter", ErrInvalidConfig)
	}
	cfg.ServiceName = cmp.Or(cfg.ServiceName, DefaultServiceName)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Resource == nil {
		cfg.Resource = resource.NewSchemaless(semconv.ServiceName(cfg.ServiceName))
	}
	col := &collector{}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithIDGenerator(fixedIDs{}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(col),
		sdktrace.WithResource(cfg.Resource),
	)
	return &Traces{
		cfg: cfg, tp: tp, col: col, runs: map[string]*openRun{},
		tracer: tp.Tracer("github.com/hookbus/hookbus/telemetry"),
	}, nil
}

// Shutdown shuts the exporter down.
func (t *Traces) Shutdown(ctx context.Context) error {
	return t.cfg.Exporter.Shutdown(ctx)
}

// Open is how many runs have spans open (started and not yet ended).
func (t *Traces) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.runs)
}

// Handle takes one event in stream order: it notes the start of the spans
// the event opens and builds and exports the spans it ends (an error
// wrapping ErrExport when the exporter fails: the event is then delivered
// again and its spans sent again, with the same ids). An event whose
// payload does not decode is an error naming it.
func (t *Traces) Handle(ctx context.Context, e *events.Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.runs[e.RunID]
	if r == nil {
		r = &openRun{chats: map[int]*openChat{}, tools: map[string]time.Time{}}
		t.runs[e.RunID] = r
	}
	if err := t.note(r, e); err != nil {
		return err
	}
	done, err := t.end(ctx, r, e)
	if err != nil {
		return err
	}
	if spans := t.col.take(); len(spans) > 0 {
		if err := t.cfg.Exporter.ExportSpans(ctx, spans); err != nil {
			return fmt.Errorf("%w: %d spans ended by %s %s: %w", ErrExport, len(spans), e.Stage, e.ID, err)
		}
	}
	if done != nil {
		done()
	}
	return nil
}

// note records the start of the spans e opens (and, with CaptureContent,
// what a model call was given).
func (t *Traces) note(r *openRun, e *events.Event) error {
	switch e.Stage {
	case events.StageIntake:
		r.startAt(e.Time)
	case events.StageRunStarted:
		r.startAt(e.Time)
		if !r.hasStart {
			p, err := events.Data[events.RunStarted](e)
			if err != nil {
				return err
			}
			r.parent, r.hasStart = p.ParentTraceparent, true
		}
	case events.StageContextAssembled:
		c := r.chats[e.Step]
		if c == nil {
			c = &openChat{}
			r.chats[e.Step] = c
		}
		if c.start.IsZero() {
			c.start = e.Time
		}
		if t.cfg.CaptureContent && c.input == nil {
			var p events.ContextAssembled
			if err := e.DecodeData(&p); err != nil {
				return err
			}
			c.input = p.Messages
		}
	case events.StageToolBefore:
		p, err := events.Data[events.ToolBefore](e)
		if err != nil {
			return err
		}
		if _, ok := r.tools[p.Call.ID]; !ok {
			r.tools[p.Call.ID] = e.Time
		}
	}
	return nil
}

func (r *openRun) startAt(t time.Time) {
	if r.start.IsZero() || t.Before(r.start) {
		r.start = t
	}
}

// recall reads the run's events back to find the starts not in memory,
// once per run.
func (t *Traces) recall(ctx context.Context, r *openRun, e *events.Event) {
	if r.recalled || t.cfg.Lookup == nil {
		return
	}
	r.recalled = true
	_, err := t.cfg.Lookup.Replay(ctx, bus.Filter{Agent: e.AgentID, Session: e.SessionID, Run: e.RunID}, func(o *events.Event) error {
		if o.ID == e.ID {
			return nil
		}
		return t.note(r, o)
	})
	if err != nil {
		t.cfg.Logger.Warn("telemetry: the run's events could not be read back; spans start at their end", "run", e.RunID, "err", err)
	}
}

// end builds the spans e ends; done forgets their starts once exported.
func (t *Traces) end(ctx context.Context, r *openRun, e *events.Event) (done func(), err error) {
	switch {
	case e.Stage == events.StageModelResponded, e.Stage == events.StageModelFailed:
		return t.endChat(ctx, r, e)
	case e.Stage == events.StageToolAfter:
		return t.endTool(ctx, r, e)
	case e.Stage.Group() == events.GroupHook:
		return nil, t.hookSpan(e)
	case e.Stage.Terminal():
		return t.endRun(ctx, r, e)
	}
	return nil, nil
}

// traceOf is the trace context e was produced in (its run's own when e
// carries none: a record older than trace contexts).
func traceOf(e *events.Event) tracectx.Context {
	if tc, err := tracectx.Parse(e.Traceparent); err == nil {
		return tc
	}
	return tracectx.Context{Trace: tracectx.RunTrace(e.RunID), Span: tracectx.RunSpan(e.RunID), Flags: tracectx.FlagSampled}
}

// span builds and ends one span with the given ids, parent (none when not
// valid), times and attributes.
type spanSpec struct {
	name       string
	kind       trace.SpanKind
	trace      tracectx.TraceID
	id, parent tracectx.SpanID
	start, end time.Time
	attrs      []attribute.KeyValue
	status     codes.Code
	desc       string
	events     []*events.Event // model.failed of retried attempts
}

func (t *Traces) span(s spanSpec) {
	ctx := context.WithValue(context.Background(), idsKey{}, spanIDs{trace: trace.TraceID(s.trace), span: trace.SpanID(s.id)})
	if s.parent != (tracectx.SpanID{}) {
		ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID(s.trace), SpanID: trace.SpanID(s.parent), TraceFlags: trace.FlagsSampled, Remote: true,
		}))
	}
	if s.start.IsZero() || s.start.After(s.end) {
		s.start = s.end
	}
	_, sp := t.tracer.Start(ctx, s.name, trace.WithTimestamp(s.start), trace.WithSpanKind(s.kind), trace.WithAttributes(s.attrs...))
	for _, f := range s.events {
		p, _ := events.Data[events.ModelFailed](f)
		sp.AddEvent("model.failed", trace.WithTimestamp(f.Time), trace.WithAttributes(
			attribute.String("error.message", p.Error), attribute.String("error.type", p.Type),
			attribute.Int("hookbus.model.attempt", p.Attempt), attribute.Int64("hookbus.model.retry_in_ms", p.RetryInMS)))
	}
	if s.status != codes.Unset {
		sp.SetStatus(s.status, s.desc)
	}
	sp.End(trace.WithTimestamp(s.end))
}

// common are the attributes of every span of e's run.
func common(e *events.Event) []attribute.KeyValue {
	a := []attribute.KeyValue{
		semconv.GenAIAgentID(e.AgentID),
		semconv.GenAIConversationID(e.SessionID),
		attribute.String("hookbus.run.id", e.RunID),
		attribute.String("hookbus.event.id", e.ID),
	}
	if e.ParentRunID != "" {
		a = append(a, attribute.String("hookbus.parent_run.id", e.ParentRunID))
	}
	return a
}

func (t *Traces) endChat(ctx context.Context, r *openRun, e *events.Event) (func(), error) {
	c := r.chats[e.Step]
	if e.Stage == events.StageModelFailed {
		p, err := events.Data[events.ModelFailed](e)
		if err != nil {
			return nil, err
		}
		if p.RetryInMS > 0 { // retried: an event of the call's span
			if c == nil {
				c = &openChat{}
				r.chats[e.Step] = c
			}
			c.retries = append(c.retries, e)
			return nil, nil
		}
	}
	if c == nil || c.start.IsZero() || t.cfg.CaptureContent && c.input == nil {
		t.recall(ctx, r, e)
		c = r.chats[e.Step]
	}
	if c == nil {
		c = &openChat{}
	}
	tc := traceOf(e)
	s := spanSpec{
		name: "chat", kind: trace.SpanKindClient, trace: tc.Trace,
		id: tracectx.ChatSpan(e.RunID, e.Step), parent: tracectx.RunSpan(e.RunID),
		start: c.start, end: e.Time, events: c.retries,
		attrs: append(common(e), semconv.GenAIOperationNameChat, attribute.Int("hookbus.step", e.Step)),
	}
	if t.cfg.CaptureContent && c.input != nil {
		s.attrs = append(s.attrs, semconv.GenAIInputMessagesKey.String(inputMessages(c.input)))
	}
	if e.Stage == events.StageModelFailed {
		p, _ := events.Data[events.ModelFailed](e)
		kind := cmp.Or(p.Type, semconv.ErrorTypeOther.Value.AsString())
		s.status, s.desc = codes.Error, p.Error
		s.attrs = append(s.attrs, semconv.ErrorTypeKey.String(kind))
		if p.Provider != "" {
			s.attrs = append(s.attrs, semconv.GenAIProviderNameKey.String(p.Provider))
		}
	} else {
		p, err := events.Data[events.ModelResponded](e)
		if err != nil {
			return nil, err
		}
		if p.Model != "" {
			s.name = "chat " + p.Model
			s.attrs = append(s.attrs, semconv.GenAIRequestModel(p.Model), semconv.GenAIResponseModel(p.Model))
		}
		if p.Provider != "" {
			s.attrs = append(s.attrs, semconv.GenAIProviderNameKey.String(p.Provider))
		}
		if p.FinishReason != "" {
			s.attrs = append(s.attrs, semconv.GenAIResponseFinishReasons(p.FinishReason))
		}
		s.attrs = append(s.attrs, semconv.GenAIUsageInputTokens(p.Usage.InputTokens), semconv.GenAIUsageOutputTokens(p.Usage.OutputTokens))
		if t.cfg.CaptureContent {
			s.attrs = append(s.attrs, semconv.GenAIOutputMessagesKey.String(outputMessages(&p)))
		}
	}
	t.span(s)
	return func() { delete(r.chats, e.Step) }, nil
}

func (t *Traces) endTool(ctx context.Context, r *openRun, e *events.Event) (func(), error) {
	p, err := events.Data[events.ToolAfter](e)
	if err != nil {
		return nil, err
	}
	start, ok := r.tools[p.Call.ID]
	if !ok {
		t.recall(ctx, r, e)
		start = r.tools[p.Call.ID]
	}
	tc := traceOf(e)
	s := spanSpec{
		name: "execute_tool " + p.Call.Name, kind: trace.SpanKindInternal, trace: tc.Trace,
		id: tracectx.ToolSpan(e.RunID, p.Call.ID), parent: tracectx.RunSpan(e.RunID), start: start, end: e.Time,
		attrs: append(common(e), semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(p.Call.Name),
			semconv.GenAIToolCallID(p.Call.ID), semconv.GenAIToolType("function"), attribute.Int("hookbus.step", e.Step)),
	}
	if p.Result.Mocked {
		s.attrs = append(s.attrs, attribute.Bool("hookbus.tool.mocked", true))
	}
	if t.cfg.CaptureContent {
		if len(p.Call.Arguments) > 0 {
			s.attrs = append(s.attrs, semconv.GenAIToolCallArgumentsKey.String(string(p.Call.Arguments)))
		}
		s.attrs = append(s.attrs, semconv.GenAIToolCallResultKey.String(p.Result.Content))
	}
	if p.Result.IsError {
		kind := "tool_error"
		if strings.HasPrefix(p.Result.Content, "denied: ") {
			kind = "denied"
			s.attrs = append(s.attrs, attribute.Bool("hookbus.tool.denied", true))
		}
		s.status, s.desc = codes.Error, oneLine(p.Result.Content)
		s.attrs = append(s.attrs, semconv.ErrorTypeKey.String(kind))
	}
	t.span(s)
	return func() { delete(r.tools, p.Call.ID) }, nil
}

func (t *Traces) endRun(ctx context.Context, r *openRun, e *events.Event) (func(), error) {
	if !r.hasStart || r.start.IsZero() {
		t.recall(ctx, r, e)
	}
	tc := traceOf(e)
	s := spanSpec{
		name: "invoke_agent " + e.AgentID, kind: trace.SpanKindInternal, trace: tc.Trace,
		id: tracectx.RunSpan(e.RunID), start: r.start, end: e.Time,
		attrs: append(common(e), semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(e.AgentID)),
	}
	if p, err := tracectx.Parse(r.parent); err == nil && p.Trace == tc.Trace {
		s.parent = p.Span
	}
	if e.Stage == events.StageRunFailed {
		p, err := events.Data[events.RunFailed](e)
		if err != nil {
			return nil, err
		}
		s.status, s.desc = codes.Error, oneLine(p.Error)
		s.attrs = append(s.attrs, semconv.ErrorTypeKey.String("run_failed"), attribute.String("hookbus.run.reason", "failed"),
			attribute.Int("hookbus.run.steps", p.Steps))
	} else {
		p, err := events.Data[events.RunCompleted](e)
		if err != nil {
			return nil, err
		}
		s.attrs = append(s.attrs, attribute.String("hookbus.run.reason", p.Reason), attribute.Int("hookbus.run.steps", p.Steps),
			semconv.GenAIUsageInputTokens(p.Usage.InputTokens), semconv.GenAIUsageOutputTokens(p.Usage.OutputTokens))
		if p.Detail != "" {
			s.attrs = append(s.attrs, attribute.String("hookbus.run.detail", oneLine(p.Detail)))
		}
	}
	t.span(s)
	return func() { delete(t.runs, e.RunID) }, nil
}

// hookSpan builds the span of one interceptor call from its record: it
// ends at the record's time and lasts the recorded latency, under the
// span the hook was called in (the record's traceparent).
func (t *Traces) hookSpan(e *events.Event) error {
	tc := traceOf(e)
	var (
		plugin, eventID string
		stage           events.Stage
		latency         int64
		s               = spanSpec{trace: tc.Trace, parent: tc.Span, end: e.Time, kind: trace.SpanKindInternal}
	)
	if e.Stage == events.StageHookDecided {
		p, err := events.Data[events.HookDecided](e)
		if err != nil {
			return err
		}
		plugin, stage, eventID, latency = p.Plugin, p.Stage, p.EventID, p.LatencyUS
		if p.Remote {
			s.kind = trace.SpanKindClient
		}
		s.attrs = append(s.attrs, attribute.String("hookbus.hook.decision", p.Decision), attribute.Bool("hookbus.hook.remote", p.Remote))
		if p.Reason != "" {
			s.attrs = append(s.attrs, attribute.String("hookbus.hook.reason", oneLine(p.Reason)))
		}
		if len(p.Patch) > 0 {
			s.attrs = append(s.attrs, attribute.String("hookbus.hook.patch", string(p.Patch)))
		}
	} else {
		p, err := events.Data[events.HookFailed](e)
		if err != nil {
			return err
		}
		plugin, stage, eventID, latency = p.Plugin, p.Stage, p.EventID, p.LatencyUS
		s.kind = trace.SpanKindClient
		s.status, s.desc = codes.Error, oneLine(p.Error)
		s.attrs = append(s.attrs, attribute.String("hookbus.hook.decision", "failed"),
			attribute.String("hookbus.hook.failure.kind", p.Kind), attribute.String("hookbus.hook.policy", p.Policy),
			attribute.String("hookbus.hook.outcome", p.Outcome), semconv.ErrorTypeKey.String(p.Kind))
	}
	eventID = cmp.Or(eventID, e.ID)
	s.name = "hook " + string(stage) + " " + plugin
	s.id = tracectx.HookSpan(eventID, plugin)
	s.start = e.Time.Add(-time.Duration(latency) * time.Microsecond)
	s.attrs = append(s.attrs, common(e)...)
	s.attrs = append(s.attrs, attribute.String("hookbus.hook.plugin", plugin), attribute.String("hookbus.hook.stage", string(stage)),
		attribute.String("hookbus.hook.event_id", eventID), attribute.Int("hookbus.step", e.Step))
	t.span(s)
	return nil
}

// oneLine bounds a text attribute to one line of at most 512 bytes.
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > 512 {
		s = strings.ToValidUTF8(s[:512], "") + "…"
	}
	return s
}
