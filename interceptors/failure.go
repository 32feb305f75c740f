package interceptors

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/hookbus/hookbus/events"
)

// Outcomes of a failure (CallFailure.Outcome, events.HookFailed.Outcome).
const (
	// FailedOpen: the policy was ignore; the chain went on.
	FailedOpen = "failed_open"
	// FailedClosed: the policy was fail; the chain ended with deny (stop on
	// stages that accept no deny).
	FailedClosed = "failed_closed"
)

// CallFailure is a failed interceptor call and what the policy made of it.
type CallFailure struct {
	// Kind is events.FailTimeout, FailNoResponders, FailBadReply, FailError
	// or FailPanic.
	Kind string
	// Err is the *CallError.
	Err     error
	Policy  Policy
	Outcome string
}

// callError builds the typed failure of a call. A *CallError returned by a
// transport keeps its kind and cause.
func callError(reg *Registration, err error) *CallError {
	var he *CallError
	if errors.As(err, &he) && kindSentinel(he.Kind) != nil {
		return &CallError{Plugin: reg.Plugin, Stage: reg.Stage, Kind: he.Kind, Err: he.Err}
	}
	return &CallError{Plugin: reg.Plugin, Stage: reg.Stage, Kind: FailureKind(err), Err: err}
}

// timeoutError is the cause of a call that did not answer in time.
func timeoutError(reg *Registration, ctxErr error) error {
	return fmt.Errorf("no answer within %s: %w", reg.Timeout, ctxErr)
}

// panicked is the cause of a call that panicked; its stack is logged, not
// carried.
type panicked struct {
	value any
	stack []byte
}

func (p *panicked) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// Is makes a recovered panic classify as events.FailPanic.
func (p *panicked) Is(target error) bool { return target == ErrPanic }

func recovered(v any) error { return &panicked{value: v, stack: debug.Stack()} }

// ClosedKind is the decision a fail-closed failure ends the chain with: deny
// where the stage accepts it, else stop (step.started, tool.after, stop).
func ClosedKind(stage events.Stage) Kind {
	if stage.Accepts().Has(events.DecisionDeny) {
		return Deny
	}
	return Stop
}

// ClosedReason is the reason of a fail-closed decision, a sentence for the
// model (it reaches it as the denied call's result, or the run's end): why
// the action was blocked, without Go error text, which the hook.failed
// record keeps whole.
func ClosedReason(kind string) string {
	switch kind {
	case events.FailTimeout:
		return "blocked: the policy check did not answer in time"
	case events.FailNoResponders:
		return "blocked: the policy check is not running"
	case events.FailBadReply:
		return "blocked: the policy check gave an answer that could not be read"
	default:
		return "blocked: the policy check failed"
	}
}
