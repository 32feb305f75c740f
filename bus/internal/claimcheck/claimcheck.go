// Package claimcheck is the claim check of hookbus' bus packages: the data
// of an event too large for one message is stored in the payloads object
// store and the message carries a reference to it (see docs/PROTOCOL.md,
// "Large payloads"). One Store serves one connection; the bus, its remote
// interceptor clients and its run queue share it.
package claimcheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/header"
	"github.com/hookbus/hookbus/bus/internal/lazy"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The claim check. An event whose encoded message (headers and body) would
// exceed the payload limit travels as a stub: the same ce-* headers plus
// ce-dataref, and an empty body. Its data is an object of the payloads
// object store (bus.Names.Payloads), stored before the stub is sent, so a reader
// never finds a reference to an object not yet written.
//
// The reference is "<bucket>/<object name>", and hookbus names the object
// after the event and its data: "evt/<event id>/<SHA-256 of the data, hex>"
// (ObjectName). An object is never overwritten: the same event with the same
// data is the same object (a publish sent again stores nothing new; a put is
// skipped when the object exists), while data a hook changed is another
// object, so what an event in the stream points to cannot change under it.

// objectPrefix starts the name of every object hookbus writes.
const objectPrefix = "evt/"

// ObjectName is the name of the payloads object that holds data of event id:
// "evt/<id>/<hex SHA-256 of data>". The event's ce-dataref is the payloads
// bucket, "/", and this name.
func ObjectName(id string, data []byte) string {
	sum := sha256.Sum256(data)
	return objectPrefix + id + "/" + hex.EncodeToString(sum[:])
}

// Store is the claim check of one connection: the payload limit, puts (at
// most one at a time per object in this process) and reads. It is safe for
// concurrent use.
type Store struct {
	nc         *nats.Conn
	js         jetstream.JetStream
	bucket     string
	maxPayload int           // WithMaxPayload; 0: the server's
	timeout    time.Duration // of a put or read made with a ctx without deadline
	log        *slog.Logger

	store     lazy.Handle[jetstream.ObjectStore] // opened on first use
	objStream lazy.Handle[jetstream.Stream]      // the payloads stream, looked up on first use

	mu     sync.Mutex
	flight map[string]*putCall // puts under way, by object name
}

type putCall struct {
	done chan struct{}
	err  error // set before done is closed
}

// New returns the claim check of the object store bucket over nc: messages
// up to maxPayload bytes (0: the server's max_payload), a put or read made
// with a ctx without deadline bounded by timeout. It does no I/O.
func New(nc *nats.Conn, js jetstream.JetStream, bucket string, maxPayload int, timeout time.Duration, log *slog.Logger) *Store {
	return &Store{nc: nc, js: js, bucket: bucket, maxPayload: maxPayload, timeout: timeout, log: log,
		flight: make(map[string]*putCall)}
}

// Limit is the largest message sent: the server's max_payload, or the
// bus' WithMaxPayload value when it is smaller. 0 when unknown (not
// connected).
func (p *Store) Limit() int {
	if p == nil || p.nc == nil {
		return 0
	}
	n := int(p.nc.MaxPayload())
	if p.maxPayload > 0 && (n <= 0 || p.maxPayload < n) {
		n = p.maxPayload
	}
	return n
}

// Bucket is the object store's name.
func (p *Store) Bucket() string { return p.bucket }

// Fit returns msg, the encoding of e, when it fits the limit with extra
// bytes of headers still to be added. Otherwise e's data is put in the
// object store and Fit returns the message of a copy of e that has no data
// and a dataref (e is not changed). A dataref e carries along with its data
// (an event read back and published again) is dropped when the data fits,
// and replaced by the object's when it does not.
//
// The error wraps ErrClaimCheck when the data cannot be stored, or
// ErrPayloadTooLarge when even the headers do not fit.
func (p *Store) Fit(ctx context.Context, e *events.Event, msg *nats.Msg, extra int) (*nats.Msg, error) {
	limit := p.Limit()
	stale := e.DataRef != "" && len(e.Data) > 0
	if limit <= 0 || limit >= 64<<10 && len(msg.Data)+extra <= limit/2 && !stale {
		return msg, nil // fast path: no need to size the headers
	}
	size := header.MsgSize(msg.Header, len(msg.Data)) + extra
	if size <= limit && !stale {
		return msg, nil
	}
	stub := *e
	if size <= limit {
		stub.DataRef = "" // the data travels in the message
	} else {
		if len(e.Data) == 0 {
			return nil, fmt.Errorf("%w: event %s (%s) has %d bytes of headers, limit %d", ErrPayloadTooLarge, e.ID, e.Stage, size, limit)
		}
		ref, err := p.put(ctx, e)
		if err != nil {
			return nil, err
		}
		stub.Data, stub.DataRef = nil, ref
	}
	h, body, err := events.Encode(&stub)
	if err != nil {
		return nil, err
	}
	if size := header.MsgSize(h, len(body)) + extra; size > limit {
		return nil, fmt.Errorf("%w: event %s (%s) is %d bytes without its data, limit %d", ErrPayloadTooLarge, e.ID, e.Stage, size, limit)
	}
	return &nats.Msg{Subject: msg.Subject, Header: h, Data: body}, nil
}

// put stores e's data under ObjectName unless it is there, and returns the
// reference. The error wraps ErrClaimCheck (and ctx's error when it ended).
func (p *Store) put(ctx context.Context, e *events.Event) (string, error) {
	name := ObjectName(e.ID, e.Data)
	ref := p.bucket + "/" + name
	for {
		p.mu.Lock()
		c, busy := p.flight[name]
		if !busy {
			c = &putCall{done: make(chan struct{})}
			p.flight[name] = c
			p.mu.Unlock()
			c.err = p.putOnce(ctx, name, e)
			p.mu.Lock()
			delete(p.flight, name)
			p.mu.Unlock()
			close(c.done)
			if c.err != nil {
				return "", c.err
			}
			return ref, nil
		}
		p.mu.Unlock()
		// The same object is being stored (parallel interceptors of one
		// event): wait, and try again only if that put failed.
		select {
		case <-c.done:
			if c.err == nil {
				return ref, nil
			}
		case <-ctx.Done():
			return "", fmt.Errorf("%w: store data of event %s: %w", ErrClaimCheck, e.ID, ctx.Err())
		}
	}
}

func (p *Store) putOnce(ctx context.Context, name string, e *events.Event) error {
	return p.PutData(ctx, name, e.Data, jetstream.ObjectMeta{
		Name:        name,
		Description: fmt.Sprintf("data of hookbus %s event %s", e.Stage, e.ID),
		Metadata: map[string]string{
			"hookbus.event": e.ID, "hookbus.stage": string(e.Stage),
			"hookbus.agent": e.AgentID, "hookbus.session": e.SessionID, "hookbus.run": e.RunID,
		},
	})
}

// PutData stores data as the object meta names unless it is there. The
// error wraps ErrClaimCheck (and ctx's error when it ended).
func (p *Store) PutData(ctx context.Context, name string, data []byte, meta jetstream.ObjectMeta) error {
	start := time.Now()
	ctx, cancel := p.Budget(ctx, len(data))
	defer cancel()
	wrap := func(err error) error {
		return fmt.Errorf("%w: store %d bytes in %s as %s: %w", ErrClaimCheck, len(data), p.bucket, name, deadline.Err(ctx, err))
	}
	obs, err := p.open(ctx)
	if err != nil {
		return wrap(err)
	}
	if _, err := obs.GetInfo(ctx, name); err == nil {
		p.log.Debug("hookbus: claim-checked data already stored", "object", name)
		return nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return wrap(err)
	}
	if err := putObject(ctx, p.js, p.bucket, meta, data); err != nil {
		return wrap(err)
	}
	p.log.Debug("hookbus: data claim-checked", "bytes", len(data), "object", name, "took", time.Since(start))
	return nil
}

// Fetch fills e.Data from the object store when e is claim-checked (DataRef
// set, Data empty) and does nothing otherwise. The error wraps
// ErrClaimCheck and names the reference; gone is true when the data will
// never be there (no such object or bucket, a reference outside the
// payloads bucket, damaged or non-JSON data) rather than a failure that may
// pass (a timeout, a lost connection, ctx's end).
func (p *Store) Fetch(ctx context.Context, e *events.Event) (gone bool, err error) {
	if e.DataRef == "" || len(e.Data) > 0 {
		return false, nil
	}
	fail := func(gone bool, err error) (bool, error) {
		return gone, fmt.Errorf("%w: data of event %s (%s) at %q: %w", ErrClaimCheck, e.ID, e.Stage, e.DataRef, err)
	}
	if p == nil {
		return fail(false, errors.New("no object store to read"))
	}
	name, ok := strings.CutPrefix(e.DataRef, p.bucket+"/")
	if !ok || name == "" {
		return fail(true, fmt.Errorf("not an object of %s", p.bucket))
	}
	ctx, cancel := p.Budget(ctx, 0)
	defer cancel()
	data, err := p.Get(ctx, name)
	if err != nil {
		return fail(ctx.Err() == nil && lost(err), deadline.Err(ctx, err))
	}
	if !events.ValidJSON(data) {
		return fail(true, errors.New("the object is not JSON"))
	}
	e.Data = data
	return false, nil
}

// Get reads the object name whole: the first description stored under
// its name (getObject), its chunks, checked against its size and digest.
func (p *Store) Get(ctx context.Context, name string) ([]byte, error) {
	st, err := p.stream(ctx)
	if err != nil {
		return nil, err
	}
	return getObject(ctx, st, p.bucket, name)
}

// lost reports whether a read error means the object is not there, or not
// as it was written.
func lost(err error) bool {
	return errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) ||
		errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrDigestMismatch) ||
		errors.Is(err, jetstream.ErrBadObjectMeta)
}

// stream returns the payloads' stream, looked up once.
func (p *Store) stream(ctx context.Context) (jetstream.Stream, error) {
	return p.objStream.Get(ctx, func(ctx context.Context) (jetstream.Stream, error) {
		s, err := p.js.Stream(ctx, "OBJ_"+p.bucket)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			err = fmt.Errorf("%w: %w", jetstream.ErrBucketNotFound, err)
		}
		return s, err
	})
}

// open returns the object store, opened once.
func (p *Store) open(ctx context.Context) (jetstream.ObjectStore, error) {
	return p.store.Get(ctx, func(ctx context.Context) (jetstream.ObjectStore, error) {
		return p.js.ObjectStore(ctx, p.bucket)
	})
}

// Budget bounds a put or read made with a ctx that has no deadline: the
// default timeout, plus a second per MiB to write.
func (p *Store) Budget(ctx context.Context, size int) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, p.timeout+time.Duration(size>>20)*time.Second)
}
