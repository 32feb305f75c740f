package runs

import (
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/jsname"
)

// Errors of the fleet and of the queue's consumers.
var (
	// ErrFleet is returned by the Fleet methods and Consume when the agents
	// or workers bucket cannot be opened, read or written, or the watch of
	// the agents bucket cannot start (the error names the bucket; a missing
	// bucket means the bus was not provisioned).
	ErrFleet = errors.New("hookbus: fleet registry unavailable")
	// ErrLegacyConsumer is returned by Consume when a consumer of the run
	// queue made by an older hookbus (one consumer for every agent,
	// "hookbus-workers" on hookbus.run.>) is still in use and overlaps the
	// per-agent consumers; the error names it and how to remove it. An
	// idle one is removed, logged.
	ErrLegacyConsumer = errors.New("hookbus: a run consumer of an older hookbus is in the way")
)

// Errors of package bus that this package's functions return too: the same
// values, so errors.Is matches either name.
var (
	// ErrInvalidOption is returned by Consume and ConsumeWakes for a bad
	// config (naming the field).
	ErrInvalidOption = bus.ErrInvalidOption
	// ErrPublish is returned by Submit, Resume and WakeAt when JetStream
	// did not store the request or the wake-up.
	ErrPublish = bus.ErrPublish
	// ErrConsumer is returned by Consume and ConsumeWakes when JetStream
	// refuses a consumer, and by List when the runs stream cannot be read.
	ErrConsumer = bus.ErrConsumer
	// ErrClaimCheck is wrapped by Submit's ErrPublish when a request too
	// large for a message cannot be stored in the payloads object store,
	// and names a taken request whose object cannot be read (the request
	// is handed back).
	ErrClaimCheck = bus.ErrClaimCheck
)

// ErrHandedBack is the cause (context.Cause) of a handler's ctx cancelled
// by Consumer.HandBack: the worker is stopping and hands its runs in flight
// back to the queue. A handler seeing it should return without ending its
// run (another worker resumes it); its error then hands the request back at
// once, using up none of its attempts' back-off. Its HandedBack method
// reports true, so a handler can match it without importing this package.
var ErrHandedBack error = handedBack{}

type handedBack struct{}

func (handedBack) Error() string {
	return "hookbus: the worker is stopping: the run is handed back to the queue for another worker"
}

// HandedBack reports true: the run is handed back, not ended.
func (handedBack) HandedBack() bool { return true }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}

// validDurable checks a durable name; the error wraps ErrInvalidOption.
func validDurable(kind, name string) error {
	if err := jsname.ValidDurable(kind, name); err != nil {
		return invalid("%v", err)
	}
	return nil
}
