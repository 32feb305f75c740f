// Package telemetry puts hookbus' events where platform teams look:
// OpenTelemetry traces and Prometheus metrics.
//
// Traces turns the events stream into OTLP spans that follow the
// OpenTelemetry GenAI semantic conventions, one trace per run:
//
//	invoke_agent {agent}      the run (a child run under its parent's Task call)
//	  chat {model}            one model call per step (retries are span events)
//	  execute_tool {tool}     one tool call, from tool.before to tool.after
//	    hook {stage} {plugin} one interceptor call (hookbus.hook.* attributes)
//
// Span ids are derived from the record (package tracectx), and the spans
// are built from the events' own times, so a durable observer that is
// restarted resumes without losing or duplicating a span: Handle returns
// once the spans an event ends are exported, and only then is the event
// acknowledged.
//
//	exp, _ := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL("http://127.0.0.1:4318/v1/traces"))
//	tr, _ := telemetry.NewTraces(telemetry.TracesConfig{Exporter: exp, Lookup: b})
//	o, _ := b.Observe(ctx, bus.ObserveConfig{Durable: "hookbus-otel"}, tr.Handle)
//
// With TracesConfig.CaptureContent the chat and tool spans also carry the
// conversation (gen_ai.input.messages, gen_ai.output.messages,
// gen_ai.tool.call.arguments and .result); Resource builds the resource
// from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, and package
// telemetry/otlp the exporter from OTEL_EXPORTER_OTLP_* (HTTP or gRPC).
//
// Metrics are Prometheus metrics fed by events, on a registry of their own:
// a worker wraps its Emitter (Metrics.Emitter: every event it appends is
// counted, every append it waits for timed) and its run handler
// (Metrics.RunHandler: queue lag); an observer calls Observe on what it
// reads. Nothing is instrumented call site by call site: the events
// already say when each step, model call, tool call and hook started and
// ended, and what each model call used. They count runs, steps, model and
// tool calls, interceptors, tokens and cost, runs in flight, and carry
// hookbus_build_info (ReadBuild: what the binary was built from, which
// --version prints too). ServeMetrics serves them on /metrics. `observer
// otel` and `loop serve --metrics` are built on this package.
package telemetry
