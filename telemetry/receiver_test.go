package telemetry_test

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP/HTTP trace receiver: it decodes the protobuf export
// requests the exporter posts and keeps every span it got, duplicates
// included.
type receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	fail  bool // answer 503
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf POST on /v1/traces", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		if rc.fail {
			rc.mu.Unlock()
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// exporter is an OTLP/HTTP exporter posting to the receiver.
func (rc *receiver) exporter(t *testing.T) *otlptrace.Exporter {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(rc.srv.URL+"/v1/traces"),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

func (rc *receiver) got() []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...)
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func str(s *tracepb.Span, key string) string {
	if v := attr(s, key); v != nil {
		return v.GetStringValue()
	}
	return ""
}

func num(s *tracepb.Span, key string) int64 {
	if v := attr(s, key); v != nil {
		return v.GetIntValue()
	}
	return -1
}

func hexID(b []byte) string { return hex.EncodeToString(b) }
