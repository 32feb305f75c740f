// Package tracectx is hookbus' W3C trace context: the traceparent every
// event carries, and the ids that make it deterministic.
//
// One run is one trace. Its spans are the run itself (invoke_agent), one
// model call per step (chat), one per tool call (execute_tool) and one per
// interceptor call; their ids are derived from what the record already
// names (the run id, the step, the tool call id, the stored event id and
// the plugin), so a resumed attempt continues the same spans and an
// exporter that sends a span twice sends the same ids. docs/PROTOCOL.md
// ("Trace context") gives the derivation.
//
// The package has no dependencies: the loop, the bus and the telemetry
// exporter share it.
//
//	tc, err := tracectx.Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
//	child := tracectx.Context{Trace: tc.Trace, Span: tracectx.RunSpan(runID), Flags: tc.Flags}
//	ev.Traceparent = child.String()
package tracectx
