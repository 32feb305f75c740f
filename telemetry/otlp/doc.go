// Package otlp makes the OTLP span exporter of `observer otel` the way
// every OpenTelemetry SDK configures one: from the standard
// OTEL_EXPORTER_OTLP_* environment variables, which a command's flags
// override. It speaks OTLP over HTTP (protobuf or JSON) and over gRPC.
//
//	exp, target, err := otlp.New(ctx, otlp.Config{})   // all from $OTEL_EXPORTER_OTLP_*
//	tr, _ := telemetry.NewTraces(telemetry.TracesConfig{Exporter: exp})
//
// It is a package of its own so that the gRPC stack is linked only into
// the binaries that export spans: `loop` (which serves metrics through
// package telemetry) does not carry it.
//
// The variables it honours, as the OpenTelemetry specification defines
// them (a traces-specific variable wins over its generic one):
//
//	OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL   grpc, http/protobuf (default), http/json
//	OTEL_EXPORTER_OTLP_ENDPOINT          http: /v1/traces is appended; grpc: as is
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT   used as is
//	OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS     key=value,key=value (percent-encoded values)
//	OTEL_EXPORTER_OTLP_TIMEOUT, _COMPRESSION, _CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY, _INSECURE, and their TRACES_ forms
//
// The protocol is read here (it chooses the exporter); everything else is
// read by the SDK's exporters themselves.
package otlp
