package modelhttp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hookbus/hookbus/loop"
)

// hookbus' own ModelError types, for failures that carry no provider type.
const (
	TypeTimeout     = "timeout"      // no complete answer before the call's deadline
	TypeConnection  = "connection"   // the request or the answer did not get through
	TypeBadResponse = "bad_response" // an answer that is truncated, does not parse or has no reply
	TypeBadRequest  = "bad_request"  // the request could not be built or sent; not retried
	TypeCanceled    = "canceled"     // the caller canceled the call; not retried
)

// BodyError is what a provider reads from an error answer's body.
type BodyError struct {
	// Type is the provider's error type or code.
	Type string
	// Message is the provider's message.
	Message string
	// Permanent marks a failure that another attempt cannot fix although
	// its status says otherwise (a quota or spend limit reached, answered
	// with 429).
	Permanent bool
}

// ParseError reads an error answer's body; it returns the zero BodyError for
// a body it does not understand.
type ParseError func(body []byte) BodyError

// Failure turns the error of the SDK call that a watched into a
// *loop.ModelError of provider. In order: a request that never went out is
// bad_request (or timeout/canceled when ctx ended); an ended ctx is timeout
// (deadline) or canceled; a body cut off part-way is bad_response with
// status 0; an error status is the provider's error as parse reads it; a
// success status whose body failed to decode is bad_response; no answer at
// all is timeout or connection.
func (a *Attempt) Failure(ctx context.Context, provider string, err error, parse ParseError) *loop.ModelError {
	if err == nil {
		return nil
	}
	if ce := ctx.Err(); ce != nil {
		if errors.Is(ce, context.DeadlineExceeded) {
			return &loop.ModelError{Provider: provider, Type: TypeTimeout, Message: "no answer before the call's deadline", Retryable: true, Err: err}
		}
		return &loop.ModelError{Provider: provider, Type: TypeCanceled, Message: "call canceled", Err: ce}
	}
	if !a.sent {
		return BadRequest(provider, err)
	}
	if a.body != nil && a.body.err != nil {
		if isTimeout(a.body.err) {
			return &loop.ModelError{Provider: provider, Type: TypeTimeout, Message: "answer body timed out: " + a.body.err.Error(), Retryable: true, Err: err}
		}
		return &loop.ModelError{Provider: provider, Type: TypeBadResponse, Retryable: true, Err: err,
			Message: fmt.Sprintf("answer body (HTTP %d) ended early: %v", a.status, a.body.err)}
	}
	if a.status >= 400 {
		var be BodyError
		if a.body != nil && parse != nil {
			be = parse(a.body.buf.Bytes())
		}
		if be.Message == "" {
			be.Message = bodySnippet(a.body)
		}
		if be.Message == "" {
			be.Message = http.StatusText(a.status)
		}
		return &loop.ModelError{
			Provider: provider, Status: a.status, Type: be.Type, Message: be.Message,
			Retryable: !be.Permanent && retryable(a.status, a.header), RetryAfter: RetryAfter(a.header, time.Now()), Err: err,
		}
	}
	if a.status != 0 {
		return &loop.ModelError{Provider: provider, Status: a.status, Type: TypeBadResponse, Retryable: true, Err: err,
			Message: "answer does not parse: " + err.Error()}
	}
	if isTimeout(err) {
		return &loop.ModelError{Provider: provider, Type: TypeTimeout, Message: err.Error(), Retryable: true, Err: err}
	}
	return &loop.ModelError{Provider: provider, Type: TypeConnection, Message: err.Error(), Retryable: true, Err: err}
}

// BadResponse is the failure for an answer that parsed but holds no usable
// reply (no choices): retryable, with the answer's status.
func (a *Attempt) BadResponse(provider, message string) *loop.ModelError {
	return &loop.ModelError{Provider: provider, Status: a.status, Type: TypeBadResponse, Message: message, Retryable: true}
}

// BadRequest is the failure for a request that cannot be built (a message
// or tool spec the provider cannot express): not retried.
func BadRequest(provider string, err error) *loop.ModelError {
	return &loop.ModelError{Provider: provider, Type: TypeBadRequest, Message: err.Error(), Err: err}
}

// retryable says whether an error status is worth another attempt: 408,
// 409, 429 and 5xx (Anthropic's 529 included), unless the answer's
// x-should-retry header says otherwise.
func retryable(status int, h http.Header) bool {
	switch strings.ToLower(h.Get("x-should-retry")) {
	case "true":
		return true
	case "false":
		return false
	}
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// bodySnippet is the start of an error body that did not parse, on one line.
func bodySnippet(b *watchedBody) string {
	if b == nil {
		return ""
	}
	s := strings.Join(strings.Fields(b.buf.String()), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
