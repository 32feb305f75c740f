package interceptors

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/events"
)

var (
	// ErrInvalidRegistration is returned by Registration.Validate and
	// Chain.Register for a registration with a bad field; the message names
	// the field.
	ErrInvalidRegistration = errors.New("hookbus: invalid registration")
	// ErrPrivileged is returned by Chain.Register when a plugin that is
	// neither built in nor granted privileged_hooks registers on a
	// privileged stage (context.assembled, model.responded).
	ErrPrivileged = errors.New("hookbus: privileged stage")
	// ErrDuplicate is returned by Chain.Register when the plugin already has
	// a registration on the stage in the same chain.
	ErrDuplicate = errors.New("hookbus: plugin already registered on stage")

	// ErrBadReply is returned by ParseDecision and Decision.Validate for a
	// reply that does not parse, is inconsistent, or is not accepted on the
	// stage. As a failure kind it is "bad_reply". A transport returns an
	// error wrapping it for a reply it cannot read.
	ErrBadReply = errors.New("hookbus: bad reply")
	// ErrTimeout is the failure of an interceptor that did not answer within
	// its timeout (kind "timeout"). A transport may return an error wrapping
	// it.
	ErrTimeout = errors.New("hookbus: interceptor timed out")
	// ErrNoResponders is the failure of a remote interceptor nobody serves
	// (kind "no_responders"). A transport returns an error wrapping it.
	ErrNoResponders = errors.New("hookbus: interceptor has no responders")
	// ErrHookError is the failure of an interceptor that returned an error
	// (kind "error").
	ErrHookError = errors.New("hookbus: interceptor error")
	// ErrPanic is the failure of an in-process interceptor that panicked
	// (kind "panic").
	ErrPanic = errors.New("hookbus: interceptor panicked")
)

// CallError is the one failure type of an interceptor call: Kind is one of
// events.FailTimeout, FailNoResponders, FailBadReply, FailError, FailPanic.
// errors.Is matches it against the sentinel of its kind (ErrTimeout,
// ErrNoResponders, ErrBadReply, ErrHookError, ErrPanic) and against
// whatever Err wraps.
type CallError struct {
	Plugin string
	Stage  events.Stage
	Kind   string
	Err    error
}

// Error names the plugin, the stage, the failure kind and the cause.
func (e *CallError) Error() string {
	return fmt.Sprintf("interceptor %s on %s failed (%s): %v", e.Plugin, e.Stage, e.Kind, e.Err)
}

// Unwrap returns the cause.
func (e *CallError) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's kind.
func (e *CallError) Is(target error) bool {
	s := kindSentinel(e.Kind)
	return s != nil && target == s
}

func kindSentinel(kind string) error {
	switch kind {
	case events.FailTimeout:
		return ErrTimeout
	case events.FailNoResponders:
		return ErrNoResponders
	case events.FailBadReply:
		return ErrBadReply
	case events.FailError:
		return ErrHookError
	case events.FailPanic:
		return ErrPanic
	}
	return nil
}

// FailureKind classifies an error returned by an interceptor (or by the
// transport calling it): a *CallError keeps its kind; otherwise an error
// wrapping ErrNoResponders, ErrBadReply, ErrTimeout (or
// context.DeadlineExceeded) or ErrPanic has that kind, and anything else is
// events.FailError.
func FailureKind(err error) string {
	var he *CallError
	switch {
	case errors.As(err, &he) && kindSentinel(he.Kind) != nil:
		return he.Kind
	case errors.Is(err, ErrNoResponders):
		return events.FailNoResponders
	case errors.Is(err, ErrBadReply):
		return events.FailBadReply
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return events.FailTimeout
	case errors.Is(err, ErrPanic):
		return events.FailPanic
	}
	return events.FailError
}
