package health

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// /healthz answers while the process serves; /readyz only when every
// check passes and the process does not drain, naming each check.
func TestProbes(t *testing.T) {
	h := New()
	var streamErr error
	h.Add("nats", func(context.Context) error { return nil })
	h.Add("stream", func(context.Context) error { return streamErr })
	srv := h.Handler()

	if code, body := get(t, srv, LivePath); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, srv, ReadyPath); code != http.StatusOK || body != "ok nats\nok stream\nready\n" {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	streamErr = errors.New("HOOKBUS_EVENTS: stream not found")
	if code, body := get(t, srv, ReadyPath); code != http.StatusServiceUnavailable || body != "ok nats\nFAIL stream: HOOKBUS_EVENTS: stream not found\n" {
		t.Fatalf("/readyz with a failing check: %d %q", code, body)
	}
	streamErr = nil
	h.Drain()
	if code, body := get(t, srv, ReadyPath); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "FAIL draining") {
		t.Fatalf("/readyz while draining: %d %q", code, body)
	}
	if code, _ := get(t, srv, LivePath); code != http.StatusOK {
		t.Fatalf("/healthz while draining: %d", code)
	}
}

// A check that does not answer within the timeout fails, saying so; the
// probe does not wait for it.
func TestSlowCheck(t *testing.T) {
	h := New()
	h.timeout = 50 * time.Millisecond
	block := make(chan struct{})
	defer close(block)
	h.Add("stream", func(context.Context) error { <-block; return nil })
	code, body := get(t, h.Handler(), ReadyPath)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "FAIL stream: no answer within 50ms") {
		t.Fatalf("/readyz with a check that hangs: %d %q", code, body)
	}
}
