package loop

import (
	"cmp"
	"fmt"
	"time"
)

// ModelError is a failed model call as a provider reports it. Providers
// make one attempt per Generate and return a *ModelError (possibly wrapped)
// for every failure; the engine records each as a model.failed event and
// retries the retryable ones with back-off (honouring RetryAfter), within the
// run's context. Any other error from Generate is a failure that is not
// retried.
type ModelError struct {
	// Provider names the provider ("openai", "anthropic", "scripted").
	Provider string
	// Status is the HTTP status of the answer; 0 when there was none
	// (connection refused, timeout, a truncated body).
	Status int
	// Type is the provider's error type or code ("rate_limit_error",
	// "overloaded_error", "server_error", "invalid_request_error"), or one
	// of hookbus' own: "timeout", "connection", "bad_response" (an answer
	// that does not parse or has no choice).
	Type string
	// Message is the provider's message, or what went wrong.
	Message string
	// Retryable is set for failures worth another attempt: 408, 409, 429,
	// 5xx, timeouts, connection failures and truncated bodies.
	Retryable bool
	// RetryAfter is the provider's Retry-After (or retry-after-ms), when it
	// gave one.
	RetryAfter time.Duration
	// Err is the underlying error, if any.
	Err error
}

// Error says what failed: provider, status, type and message.
func (e *ModelError) Error() string {
	s := cmp.Or(e.Provider, "model")
	if e.Status != 0 {
		s += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	} else if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *ModelError) Unwrap() error { return e.Err }
