package bus

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hookbus/hookbus/bus/internal/claimcheck"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/lazy"
	"github.com/hookbus/hookbus/internal/redact"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bus is hookbus' transport over one NATS connection: provisioning,
// publishing, observing, replaying and the run queue. It is safe for
// concurrent use. The connection belongs to the caller: close it after the
// bus is no longer used.
type Bus struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	subj   events.Subjects
	names  Names
	opts   options
	log    *slog.Logger
	acks   *ackTracker
	fences movedFences                   // fences moved past foreign messages (fence.go)
	pay    *claimcheck.Store             // the claim check (payloads.go)
	events lazy.Handle[jetstream.Stream] // the events stream's handle
	froms  readFroms                     // where each session read starts (readfrom.go)
	hdrs   sync.Pool                     // headers of acknowledged messages, for the next (publisher.go)
}

// New returns a Bus over nc. It does no I/O: call Provision to create the
// streams and buckets. It returns an error wrapping ErrInvalidOption for a
// nil connection or a bad option.
func New(nc *nats.Conn, opts ...Option) (*Bus, error) {
	if nc == nil {
		return nil, invalid("nil connection")
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	subj, err := events.NewSubjects(o.prefix)
	if err != nil {
		return nil, invalid("%v", err)
	}
	b := &Bus{
		nc: nc, subj: subj, names: NamesFor(o.prefix), opts: o, log: o.logger,
	}
	b.acks = newAckTracker(b)
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncAckHandler(b.acks.acked),
		jetstream.WithPublishAsyncErrHandler(b.acks.failed),
		jetstream.WithPublishAsyncTimeout(o.ackTimeout),
		jetstream.WithPublishAsyncMaxPending(o.maxPending),
		jetstream.WithDefaultTimeout(o.timeout),
	)
	if err != nil {
		return nil, invalid("%v", err)
	}
	b.js = js
	b.pay = claimcheck.New(nc, js, b.names.Payloads, o.maxPayload, o.timeout, b.log)
	return b, nil
}

// JetStream returns the bus' JetStream context. Asynchronous publishes made
// through it directly are not tracked by Flush.
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// Conn returns the NATS connection.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// Subjects returns the subject builder of the bus' prefix.
func (b *Bus) Subjects() events.Subjects { return b.subj }

// Names returns the stream and bucket names of the bus' prefix.
func (b *Bus) Names() Names { return b.names }

// Logger returns the bus' logger (WithLogger), which the packages built on
// the bus log to as well.
func (b *Bus) Logger() *slog.Logger { return b.log }

// Timeout returns the timeout of requests made with a ctx that has no
// deadline (WithDefaultTimeout).
func (b *Bus) Timeout() time.Duration { return b.opts.timeout }

// withTimeout applies the default timeout when ctx has no deadline.
func (b *Bus) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return deadline.Default(ctx, b.opts.timeout)
}

// Connect connects to an external nats-server at url (comma-separated for a
// cluster) with hookbus' defaults: a connection name, reconnecting forever
// every 500ms with jitter, and retrying a failed first connect. Options
// given are applied after the defaults. The error names url with its user
// info masked. An in-process server is started
// with bus/embedded.
func Connect(url string, opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{
		nats.Name("hookbus"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
	}, opts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("hookbus: connect %s: %w", redact.URL(url), redact.Error(err, redact.UserInfo(url)...)) // never the credentials
	}
	return nc, nil
}

// eventsStream returns the events stream's handle, asking the server only
// the first time (and again after a failure): jetstream's Stream asks for
// the stream's info (an API request) each time, and the handle's reads
// (GetLastMsgForSubject, GetMsg) need none of it.
func (b *Bus) eventsStream(ctx context.Context) (jetstream.Stream, error) {
	return b.events.Get(ctx, func(ctx context.Context) (jetstream.Stream, error) {
		return b.js.Stream(ctx, b.names.Events)
	})
}
