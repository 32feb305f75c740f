package approval

import (
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/events"
)

var (
	// ErrInvalid is returned by Answer for a request with bad ids, action,
	// reason, arguments or actor, and for Deps without a History or a
	// Recorder. Nothing is recorded.
	ErrInvalid = errors.New("approval: invalid answer")
	// ErrBadAnswer is returned by Answer for an answer the run cannot take:
	// no such run, no such call waiting, a call answered already (an
	// *AnsweredError naming the first answer), or a run that ended. Nothing
	// is recorded.
	ErrBadAnswer = errors.New("approval: answer refused")
	// ErrRunBusy is returned by Answer and Expire when the run is still
	// working on its step's other calls after Deps.Settle: answer again
	// once it waits. Nothing is recorded.
	ErrRunBusy = errors.New("approval: the run is still running its step")
	// ErrUnrecorded is returned by Answer and Expire when the run's record
	// cannot be read or written (NATS away, or the session kept changing).
	ErrUnrecorded = errors.New("approval: the answer could not be recorded")
	// ErrCorruptRun is returned by Answer and Expire when the run's events
	// that say what waits cannot be read. Nothing is recorded.
	ErrCorruptRun = errors.New("approval: the run's events cannot be read")
)

// AnsweredError is Answer's error for a call that has an answer already:
// First is that answer. It matches ErrBadAnswer with errors.Is.
type AnsweredError struct {
	RunID, CallID string
	First         events.ApprovalResolved
	// Ended is the stage of the run's end when the run has ended since.
	Ended events.Stage
}

func (e *AnsweredError) Error() string {
	msg := fmt.Sprintf("%s: call %s of run %s was answered already: %s", ErrBadAnswer, e.CallID, e.RunID, e.First.Describe())
	if e.Ended != "" {
		msg += fmt.Sprintf("; the run has ended (%s)", e.Ended)
	}
	return msg
}

// Is matches ErrBadAnswer.
func (e *AnsweredError) Is(target error) bool { return target == ErrBadAnswer }
