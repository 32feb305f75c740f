package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/claimcheck"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/header"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/events/tracectx"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// Headers of an interception request, besides the event's ce-* headers.
const (
	// HeaderDeadline is when the caller stops waiting for the reply, RFC 3339
	// with nanoseconds, UTC.
	HeaderDeadline = "Hookbus-Deadline"
	// HeaderTimeoutMs is the budget left when the request was sent, in
	// milliseconds rounded up: the deadline for a service whose clock cannot
	// be trusted.
	HeaderTimeoutMs = "Hookbus-Timeout-Ms"
	// HeaderTraceparent is the W3C trace context of the interceptor call
	// (lower case, as W3C Trace Context asks): an interceptor instrumented
	// with OpenTelemetry continues the run's trace from it.
	HeaderTraceparent = "traceparent"
)

// Client is an interceptor served over NATS (by Serve, or by any service
// that speaks the protocol in docs/PROTOCOL.md): Intercept sends the stage's
// event as a request to <prefix>.hook.<stage>.<plugin> and reads the
// decision from the reply. It is safe for concurrent use. Its replies come
// on a subscription of its own under a new inbox of the connection's inbox
// prefix (made at the first call, ended when the Client is collected or
// the connection closes), as nats.go's requests take theirs.
//
// Register it with the registration Registration returns (Remote set, so
// the audit records say so), or with Register.
type Client struct {
	subj events.Subjects
	reg  interceptors.Registration
	hook string            // the subject of reg.Stage
	pay  *claimcheck.Store // the claim check of requests too large for a message
	rep  *replies          // routes the replies to its requests
}

// NewClient returns a client, over b's connection, of the plugin reg names
// on reg.Stage. It does no I/O. The error wraps
// interceptors.ErrInvalidRegistration, or events.ErrInvalidID for a bad
// plugin id.
func NewClient(b *bus.Bus, reg interceptors.Registration) (*Client, error) {
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	subj := b.Subjects()
	hook, err := subj.Hook(reg.Stage, reg.Plugin)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", interceptors.ErrInvalidRegistration, err)
	}
	reg.Remote = true
	r := &Client{subj: subj, reg: reg, hook: hook, pay: b.ClaimCheck(), rep: &replies{nc: b.Conn()}}
	runtime.AddCleanup(r, (*replies).stop, r.rep) // its reply subscription ends with it
	return r, nil
}

// Register registers a Client of reg, over b's connection, on chain and
// returns the function that removes it. Errors are those of NewClient and
// interceptors.Chain.Register (ErrInvalidRegistration, ErrPrivileged,
// ErrDuplicate).
func Register(b *bus.Bus, chain *interceptors.Chain, reg interceptors.Registration) (unregister func(), err error) {
	r, err := NewClient(b, reg)
	if err != nil {
		return nil, err
	}
	return chain.Register(r.Registration(), r)
}

// Registration returns the registration the client was made for, with
// Remote set.
func (r *Client) Registration() interceptors.Registration { return r.reg }

// Subject returns the subject the client sends requests to.
func (r *Client) Subject() string { return r.hook }

// BoundByContext makes Client an interceptors.ContextBound: Intercept
// returns once its ctx ends (the NATS request and the claim check are
// bounded by it), so a chain calls it without a goroutine of its own.
func (r *Client) BoundByContext() {}

var _ interceptors.ContextBound = (*Client)(nil)

// Intercept sends req.Event to the plugin and returns its decision, which the
// chain validates for the stage. The request carries the event in
// CloudEvents binary mode plus HeaderDeadline and HeaderTimeoutMs, taken
// from the earlier of ctx's deadline and req.Deadline (the registration's
// timeout when neither is set). An event too large for a request (the
// payload limit, see bus.WithMaxPayload) is claim-checked as bus.Publish
// does: its data is stored in the payloads object store first, within the
// deadline, and the request carries ce-dataref and no body (Serve fetches
// the data before calling the interceptor). A reply is not claim-checked: a decision
// that modifies a large payload should send a patch, not the whole data.
//
// An empty reply is allow (a nil decision). Failures are
// *interceptors.CallError values whose kind matches the sentinel:
// ErrNoResponders when nobody serves the subject (reported at once, not at
// the deadline), ErrTimeout when the deadline passes first, ErrBadReply for
// a reply that does not parse (the error says what is wrong), and
// ErrHookError for an error reply (a micro error, whose *ErrorReply the
// HookError wraps) or a request that could not be sent. An error reply with
// code 504 (the service gave up at the deadline) is a timeout. When ctx is
// canceled the error wraps ctx.Err().
func (r *Client) Intercept(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	if req == nil || req.Event == nil {
		return nil, r.fail(req, events.FailError, fmt.Errorf("%w: no event to send", events.ErrMalformedEvent))
	}
	subj := r.hook
	if req.Stage != r.reg.Stage && req.Stage != "" {
		var err error
		if subj, err = r.subj.Hook(req.Stage, r.reg.Plugin); err != nil {
			return nil, r.fail(req, events.FailError, err)
		}
	}
	due, bounded := ctx.Deadline()
	if !bounded || (!req.Deadline.IsZero() && req.Deadline.Before(due)) {
		due = req.Deadline
		if due.IsZero() {
			due = time.Now().Add(r.reg.WithDefaults().Timeout)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, due)
		defer cancel()
	}
	if time.Until(due) <= 0 {
		return nil, r.fail(req, events.FailTimeout, fmt.Errorf("no time left to call %s: %w", subj, context.DeadlineExceeded))
	}

	hb, body, kept, err := requestOf(req)
	defer hb.done(kept) // the request is written before the reply is awaited
	if err != nil {
		return nil, r.fail(req, events.FailError, fmt.Errorf("encode request: %w", err))
	}
	msg := &nats.Msg{Subject: subj, Header: hb.h, Data: body}
	fitted := false
	if r.pay != nil { // data too large for a request: claim-checked (bus.ClaimCheck)
		fit, err := r.pay.Fit(ctx, req.Event, msg, requestHeaderSize)
		if err != nil {
			err = fmt.Errorf("request on %s: %w", subj, deadline.Err(ctx, err))
			switch {
			case errors.Is(ctx.Err(), context.DeadlineExceeded):
				return nil, r.fail(req, events.FailTimeout, err)
			case ctx.Err() != nil:
				return nil, err
			}
			return nil, r.fail(req, events.FailError, err)
		}
		msg, fitted = fit, fit != msg
	}
	budget := time.Until(due)
	if budget <= 0 {
		return nil, r.fail(req, events.FailTimeout, fmt.Errorf("no time left to call %s: %w", subj, context.DeadlineExceeded))
	}
	delete(msg.Header, events.HeaderMsgID) // a JetStream de-duplication id means nothing on a request
	// Both values in one string: one allocation.
	var buf [64]byte
	vals := due.UTC().AppendFormat(buf[:0], time.RFC3339Nano)
	n := len(vals)
	vals = strconv.AppendInt(vals, int64((budget+time.Millisecond-1)/time.Millisecond), 10)
	both := string(vals)
	own := hb // the pooled builder holds the header, unless the claim check made a new one
	if fitted {
		own = nil
	}
	own.set(msg.Header, HeaderDeadline, both[:n])
	own.set(msg.Header, HeaderTimeoutMs, both[n:])
	if tp := traceparent(ctx, req, r.reg.Plugin); tp != "" {
		own.set(msg.Header, HeaderTraceparent, tp)
	}

	reply, err := r.rep.request(ctx, msg)
	if err != nil {
		return nil, r.requestError(ctx, req, subj, budget, err)
	}
	return r.decision(req, reply)
}

// requestHeaderSize bounds what the deadline and trace headers add to a
// request.
const requestHeaderSize = len(HeaderDeadline+": \r\n"+HeaderTimeoutMs+": \r\n") + len(time.RFC3339Nano) + 20 +
	len(HeaderTraceparent+": \r\n") + 55

// traceparent is the trace context of the call of plugin: the span the
// loop derived for it (tracectx.HookCall), or, from a caller that set none,
// the event's own.
func traceparent(ctx context.Context, req *interceptors.Request, plugin string) string {
	if tc, ok := tracectx.HookCall(ctx, plugin); ok {
		return tc.String()
	}
	return req.Event.Traceparent
}

// requestError maps a failed request to its failure kind.
func (r *Client) requestError(ctx context.Context, req *interceptors.Request, subj string, budget time.Duration, err error) error {
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return r.fail(req, events.FailNoResponders, fmt.Errorf("no service answers on %s: %w", subj, err))
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return r.fail(req, events.FailTimeout, fmt.Errorf("no reply on %s within %s: %w", subj, budget.Round(time.Millisecond), err))
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("request on %s: %w", subj, ctx.Err())
	}
	return r.fail(req, events.FailError, fmt.Errorf("request on %s: %w", subj, err))
}

// decision reads a reply.
func (r *Client) decision(req *interceptors.Request, reply *nats.Msg) (*interceptors.Decision, error) {
	if len(reply.Header) > 0 {
		if err := replyError(reply.Header); err != nil {
			kind := events.FailError
			if se, ok := err.(*ErrorReply); ok && se.Code == "504" {
				kind = events.FailTimeout // the service gave up at the deadline
			}
			return nil, r.fail(req, kind, err)
		}
	}
	if len(bytes.TrimSpace(reply.Data)) == 0 {
		return nil, nil
	}
	d, err := interceptors.ParseDecision(reply.Data)
	if err != nil {
		return nil, r.fail(req, events.FailBadReply, err)
	}
	return d, nil
}

func (r *Client) fail(req *interceptors.Request, kind string, err error) error {
	stage := r.reg.Stage
	if req != nil && req.Stage != "" {
		stage = req.Stage
	}
	return &interceptors.CallError{Plugin: r.reg.Plugin, Stage: stage, Kind: kind, Err: err}
}

// ErrorReply is the error reply of a remote interceptor: a nats.go micro
// error, whose headers Nats-Service-Error-Code and Nats-Service-Error carry
// Code and Description. Serve answers 400 for a request it cannot read, 500
// for an interceptor that returned an error or panicked, and 504 when the
// request's deadline passed before it was handled (a timeout for the
// caller).
type ErrorReply struct {
	Code        string
	Description string
}

// Error returns the code and the description.
func (e *ErrorReply) Error() string {
	return "service error " + e.Code + ": " + e.Description
}

// replyError returns the *ErrorReply of a micro error reply, an error for
// a NATS status message, or nil.
func replyError(h nats.Header) error {
	code, _ := header.Value(h, micro.ErrorCodeHeader)
	desc, isErr := header.Value(h, micro.ErrorHeader)
	if code != "" || isErr {
		if code == "" {
			code = "500"
		}
		if desc == "" {
			desc = "(no description)"
		}
		return &ErrorReply{Code: code, Description: desc}
	}
	if status, ok := header.Value(h, "Status"); ok {
		d, _ := header.Value(h, "Description")
		return fmt.Errorf("reply is a NATS status message %s %s, not an answer", status, d)
	}
	return nil
}
