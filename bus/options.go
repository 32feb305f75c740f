package bus

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus/internal/jsname"
	"github.com/hookbus/hookbus/events"
)

// Defaults of the client options.
const (
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultTimeout         = 5 * time.Second
	DefaultAckTimeout      = 5 * time.Second
	DefaultOutageWait      = 5 * time.Minute
	DefaultMaxPending      = 4000
)

// Option configures a Bus. Options validate their argument: a bad value
// makes New return an error wrapping ErrInvalidOption.
type Option func(*options) error

type options struct {
	prefix          string
	logger          *slog.Logger
	replicas        int
	eventsMaxAge    time.Duration
	duplicateWindow time.Duration
	maxPayload      int
	timeout         time.Duration
	ackTimeout      time.Duration
	outage          time.Duration
	maxPending      int
}

func defaultOptions() options {
	return options{
		prefix:          events.DefaultPrefix,
		replicas:        1,
		duplicateWindow: DefaultDuplicateWindow,
		timeout:         DefaultTimeout,
		ackTimeout:      DefaultAckTimeout,
		outage:          DefaultOutageWait,
		maxPending:      DefaultMaxPending,
	}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}

// WithPrefix sets the subject prefix (default "hookbus"). It may hold several
// dot-separated tokens of letters, digits, '_' and '-'; the stream and bucket
// names derive from it (see Names).
func WithPrefix(prefix string) Option {
	return func(o *options) error {
		if prefix == "" {
			return invalid("empty subject prefix")
		}
		if _, err := events.NewSubjects(prefix); err != nil {
			return invalid("%v", err)
		}
		for _, tok := range strings.Split(prefix, ".") {
			if !jsname.ValidToken(tok) {
				return invalid("subject prefix %q: token %q may hold only letters, digits, '_' and '-'", prefix, tok)
			}
		}
		o.prefix = prefix
		return nil
	}
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return invalid("nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithReplicas sets the replica count of provisioned streams and buckets
// (default 1; 3 for an R3 cluster). It must be between 1 and 5.
func WithReplicas(n int) Option {
	return func(o *options) error {
		if n < 1 || n > 5 {
			return invalid("replicas %d (want 1..5)", n)
		}
		o.replicas = n
		return nil
	}
}

// WithEventsMaxAge bounds how long the events stream keeps an event
// (default 0: forever), and the payloads object store the data of a
// claim-checked one (its TTL).
func WithEventsMaxAge(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return invalid("events max age %v is negative", d)
		}
		o.eventsMaxAge = d
		return nil
	}
}

// WithDuplicateWindow sets the streams' de-duplication window (default 2m):
// a message whose Nats-Msg-Id was stored within the window is stored once.
func WithDuplicateWindow(d time.Duration) Option {
	return func(o *options) error {
		if d < 100*time.Millisecond {
			return invalid("duplicate window %v (want >= 100ms)", d)
		}
		o.duplicateWindow = d
		return nil
	}
}

// WithMaxPayload sets the largest encoded event or interception request
// (headers + body, in bytes) the bus sends as one message; 0 (the default)
// means the server's max_payload, which also bounds a larger value. The
// data of a larger event is claim-checked: stored in the payloads object
// store, the message carrying a dataref instead (see ObjectName).
func WithMaxPayload(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return invalid("max payload %d is negative", n)
		}
		o.maxPayload = n
		return nil
	}
}

// WithDefaultTimeout sets the timeout of requests (provisioning, runs.Queue.Submit,
// DLQ writes) made with a ctx that has no deadline (default 5s).
func WithDefaultTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return invalid("default timeout %v (want > 0)", d)
		}
		o.timeout = d
		return nil
	}
}

// WithPublishRetry sets how long Publish and PublishSync wait for one
// JetStream ack (default 5s), and how long a publish that fails for a
// reason that may pass (an ack that does not come, no stream answering
// while a stream leader is elected, a lost connection) keeps being sent
// again, with back-off and the same Nats-Msg-Id, before Flush (or
// PublishSync) reports it: the outage bound (default 5m). An outage shorter
// than the bound is waited out; a run is never failed for it.
func WithPublishRetry(ackTimeout, outage time.Duration) Option {
	return func(o *options) error {
		if ackTimeout <= 0 {
			return invalid("ack timeout %v (want > 0)", ackTimeout)
		}
		if outage < 0 {
			return invalid("outage bound %v is negative", outage)
		}
		o.ackTimeout, o.outage = ackTimeout, outage
		return nil
	}
}

// WithMaxPending bounds the asynchronous publishes awaiting an ack (default
// 4000); Publish waits for room beyond it.
func WithMaxPending(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return invalid("max pending %d (want >= 1)", n)
		}
		o.maxPending = n
		return nil
	}
}
