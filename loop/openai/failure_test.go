package openai_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/fakellm"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/openai"
)

var hello = &loop.ModelRequest{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}}

// modelError calls Generate once and returns its *loop.ModelError.
func modelError(t *testing.T, ctx context.Context, m *openai.Model) *loop.ModelError {
	t.Helper()
	resp, err := m.Generate(ctx, hello)
	var me *loop.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("Generate = %+v, %v; want a *loop.ModelError", resp, err)
	}
	if me.Provider != openai.Provider {
		t.Errorf("Provider = %q", me.Provider)
	}
	return me
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		recording  string
		status     int
		typ        string
		retryable  bool
		retryAfter time.Duration
		message    string
	}{
		{"openai/empty_choices", 200, "bad_response", true, 0, "no choices"},
		{"openai/server_error_then_success", 500, "server_error", true, 0, "The server had an error"},
		{"openai/rate_limited", 429, "rate_limit_exceeded", true, 20 * time.Second, "Rate limit reached"},
		{"openai/insufficient_quota", 429, "insufficient_quota", false, 0, "exceeded your current quota"},
		{"openai/invalid_request", 400, "invalid_request_error", false, 0, "preceeding message"},
		{"openai/bad_gateway_html", 502, "", true, 0, "502 Bad Gateway"},
		{"openai/truncated", 0, "bad_response", true, 0, "ended early"},
		{"openai/unparsable", 200, "bad_response", true, 0, "does not parse"},
	} {
		t.Run(tc.recording, func(t *testing.T) {
			srv := fakellm.Start(t, fakellm.MustRecorded(tc.recording))
			me := modelError(t, context.Background(), newModel(t, srv, nil))
			if me.Status != tc.status || me.Type != tc.typ || me.Retryable != tc.retryable || me.RetryAfter != tc.retryAfter ||
				!strings.Contains(me.Message, tc.message) {
				t.Fatalf("ModelError = %+v\nwant status %d, type %q, retryable %v, retry after %v, message with %q",
					me, tc.status, tc.typ, tc.retryable, tc.retryAfter, tc.message)
			}
		})
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("openai/server_error_then_success"))
	m := newModel(t, srv, nil)
	if me := modelError(t, context.Background(), m); !me.Retryable {
		t.Fatalf("500 not retryable: %+v", me)
	}
	r, err := m.Generate(context.Background(), hello)
	if err != nil || r.Message.Content != "Hello again." {
		t.Fatalf("second attempt = %+v, %v", r, err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("server saw %d requests, want 2: one attempt per Generate", n)
	}
}

func TestTimeoutReturns(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("openai/slow"))
	m := newModel(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := m.Generate(ctx, hello)
		got <- err
	}()
	select {
	case err := <-got:
		var me *loop.ModelError
		if !errors.As(err, &me) || me.Type != "timeout" || !me.Retryable || me.Status != 0 || !errors.Is(me, context.DeadlineExceeded) {
			t.Fatalf("ModelError = %+v, want a retryable timeout", me)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Generate hangs past its deadline (the server answers after 30 s)")
	}
}

func TestHTTPClientTimeout(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("openai/slow"))
	m := newModel(t, srv, func(c *openai.Config) { c.HTTPClient = &http.Client{Timeout: 100 * time.Millisecond} })
	me := modelError(t, context.Background(), m)
	if me.Type != "timeout" || !me.Retryable || me.Status != 0 {
		t.Fatalf("ModelError = %+v, want a retryable timeout", me)
	}
}

func TestCanceled(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("openai/slow"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	me := modelError(t, ctx, newModel(t, srv, nil))
	if me.Type != "canceled" || me.Retryable || !errors.Is(me, context.Canceled) {
		t.Fatalf("ModelError = %+v, want canceled, not retryable", me)
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := fakellm.New(fakellm.MustRecorded("openai/slow"))
	m := newModel(t, srv, nil)
	srv.Close()
	me := modelError(t, context.Background(), m)
	if me.Type != "connection" || !me.Retryable || me.Status != 0 {
		t.Fatalf("ModelError = %+v, want a retryable connection failure", me)
	}
}
