package anthropic_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/fakellm"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/anthropic"
)

var hello = &loop.ModelRequest{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}}

// modelError calls Generate once and returns its *loop.ModelError.
func modelError(t *testing.T, ctx context.Context, m *anthropic.Model) *loop.ModelError {
	t.Helper()
	resp, err := m.Generate(ctx, hello)
	var me *loop.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("Generate = %+v, %v; want a *loop.ModelError", resp, err)
	}
	if me.Provider != anthropic.Provider {
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
		{"anthropic/overloaded_then_success", 529, "overloaded_error", true, 0, "Overloaded"},
		{"anthropic/server_error_then_success", 500, "api_error", true, 0, "Internal server error"},
		{"anthropic/rate_limited", 429, "rate_limit_error", true, 15 * time.Second, "exceed the rate limit"},
		{"anthropic/spend_limit", 429, "rate_limit_error", false, 0, "usage limits"},
		{"anthropic/invalid_request", 400, "invalid_request_error", false, 0, "tool_result"},
		{"anthropic/truncated", 0, "bad_response", true, 0, "ended early"},
		{"anthropic/unparsable", 200, "bad_response", true, 0, "does not parse"},
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

func TestOverloadedThenSuccess(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("anthropic/overloaded_then_success"))
	m := newModel(t, srv, nil)
	if me := modelError(t, context.Background(), m); me.Status != 529 || !me.Retryable {
		t.Fatalf("529 = %+v, want retryable", me)
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
	srv := fakellm.Start(t, fakellm.MustRecorded("anthropic/slow"))
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
			t.Fatalf("err = %v, want a retryable timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Generate hangs past its deadline (the server answers after 30 s)")
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := fakellm.New(fakellm.MustRecorded("anthropic/slow"))
	m := newModel(t, srv, nil)
	srv.Close()
	me := modelError(t, context.Background(), m)
	if me.Type != "connection" || !me.Retryable || me.Status != 0 {
		t.Fatalf("ModelError = %+v, want a retryable connection failure", me)
	}
}
