package loop

import (
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/events"
)

var (
	// ErrInvalidConfig is returned by New for a configuration it cannot run with.
	ErrInvalidConfig = errors.New("loop: invalid config")
	// ErrInvalidRequest is returned by Run for a request with bad ids or no
	// prompt; nothing is published.
	ErrInvalidRequest = errors.New("loop: invalid run request")
	// ErrUnknownTool is the error of a call to a tool the engine does not have.
	ErrUnknownTool = errors.New("loop: unknown tool")
	// ErrToolArguments is the error of a tool call whose arguments are not
	// a JSON object (a model that sent invalid JSON).
	ErrToolArguments = errors.New("loop: bad tool arguments")
	// ErrToolTimeout is the error of a tool call that did not end within
	// Config.ToolTimeout, or that did not return within Config.ToolGrace
	// once its ctx ended and was abandoned. The message names the tool and
	// the timeout.
	ErrToolTimeout = errors.New("loop: tool call timed out")
	// ErrUnrecorded is returned by Run when the run's events cannot be
	// recorded (NATS away for longer than the Emitter waits, or another
	// attempt claimed the session): the run was not ended, and it resumes
	// from its events when it is run again.
	ErrUnrecorded = errors.New("loop: the run's events could not be recorded")
	// ErrStaleRead is returned (with ErrUnrecorded) when a read of a
	// session lacks an event known to be stored (the attempt's claim, the
	// answer that resumed the run): the replica that served it is behind
	// the stream. The request is handed back and read again.
	ErrStaleRead = errors.New("loop: the session read is behind the stream")
	// ErrCorruptSession is returned when a session's events cannot be
	// rebuilt into a conversation.
	ErrCorruptSession = errors.New("loop: session events cannot be rebuilt")
)

// ErrLostRun is returned by Run when another attempt of the same run
// (another worker, after this one's lease lapsed) claimed the session, or
// the run's record has its end already when this attempt would close it:
// that attempt ends (or ended) the run; this one wrote nothing more. A
// worker leaves the request to the worker that holds the run now, rather
// than acknowledge it.
var ErrLostRun = errors.New("loop: run taken over by another attempt")

// ErrOtherDefinition is returned by Run, before anything is written, for a
// run whose record says it runs on another definition of its agent than
// the engine's (Config.Definition), when the engine may not adopt it
// (Config.OnDefinitionChange). Its errors are *DefinitionError values: a
// worker hands the run to the workers of the recorded definition.
var ErrOtherDefinition = errors.New("loop: the run is recorded on another agent definition")

// DefinitionError says which definition a run is recorded on, and which
// one the engine that refused it has.
type DefinitionError struct {
	RunID    string
	AgentID  string
	Recorded events.Definition // the run's, from its last run.started
	Engine   events.Definition // the engine's
}

func (e *DefinitionError) Error() string {
	return fmt.Sprintf("loop: run %s of agent %s is recorded on definition %s; this worker runs %s", e.RunID, e.AgentID, e.Recorded, e.Engine)
}

// Is makes errors.Is(err, ErrOtherDefinition) true.
func (e *DefinitionError) Is(target error) bool { return target == ErrOtherDefinition }
