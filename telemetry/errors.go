package telemetry

import "errors"

// ErrInvalidConfig is returned by NewTraces and NewMetrics for a config
// that cannot work (no exporter, ...).
var ErrInvalidConfig = errors.New("telemetry: invalid config")

// ErrExport wraps a failure of the span exporter: Traces.Handle returns it,
// so the observer delivers the event again and nothing is lost.
var ErrExport = errors.New("telemetry: export failed")
