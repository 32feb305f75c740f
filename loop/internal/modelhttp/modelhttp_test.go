package modelhttp

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 9, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header map[string]string
		want   time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "20"}, 20 * time.Second},
		{map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{map[string]string{"Retry-After": "20", "Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "bogus", "Retry-After": "3"}, 3 * time.Second},
		{map[string]string{"Retry-After": "Mon, 29 Sep 2025 12:00:30 GMT"}, 30 * time.Second},
		{map[string]string{"Retry-After": "Mon, 29 Sep 2025 11:59:00 GMT"}, 0},
		{map[string]string{"Retry-After": "-5"}, 0},
		{map[string]string{"Retry-After": "NaN"}, 0},
		{map[string]string{"Retry-After": "1e300"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
	} {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got := RetryAfter(h, now); got != tc.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tc.header, got, tc.want)
		}
	}
}

func TestRetryable(t *testing.T) {
	for status, want := range map[int]bool{400: false, 401: false, 403: false, 404: false, 408: true, 409: true, 413: false, 422: false, 429: true, 500: true, 502: true, 503: true, 529: true} {
		if got := retryable(status, http.Header{}); got != want {
			t.Errorf("retryable(%d) = %v, want %v", status, got, want)
		}
	}
	h := http.Header{}
	h.Set("x-should-retry", "false")
	if retryable(503, h) {
		t.Error("x-should-retry: false must win over 503")
	}
	h.Set("x-should-retry", "true")
	if !retryable(400, h) {
		t.Error("x-should-retry: true must win over 400")
	}
}
