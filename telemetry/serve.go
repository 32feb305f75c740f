package telemetry

import (
	"context"
	"net/http"

	"github.com/hookbus/hookbus/internal/httpauth"
)

// ServeMetrics serves m at GET /metrics on ln until ctx ends. ln stands
// behind its guard (httpauth): it answers only its own host names, and a
// bearer token of its token file when one is configured (Prometheus:
// authorization.credentials_file).
func ServeMetrics(ctx context.Context, ln *httpauth.Listener, m *Metrics) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	go func() { _ = ln.Serve(ctx, mux) }()
}
