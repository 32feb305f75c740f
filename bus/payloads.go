package bus

import (
	"context"
	"fmt"

	"github.com/hookbus/hookbus/bus/internal/claimcheck"
	"github.com/hookbus/hookbus/events"
)

// ObjectName is the name of the payloads object that holds data of event id:
// "evt/<id>/<hex SHA-256 of data>". The event's ce-dataref is the payloads
// bucket, "/", and this name. An object is never overwritten: the same
// event with the same data is the same object, while data a hook changed
// is another object (docs/PROTOCOL.md, "Large payloads").
func ObjectName(id string, data []byte) string { return claimcheck.ObjectName(id, data) }

// ClaimCheck returns the bus' claim check (the payloads object store and
// the payload limit), which the packages built on the bus share with it:
// bus/remote claim-checks large interception requests with it and
// bus/runs large run requests. Its type is internal to hookbus; FetchData
// is how others read a claim-checked event's data.
func (b *Bus) ClaimCheck() *claimcheck.Store { return b.pay }

// FetchData fills e.Data from the payloads object store when e is
// claim-checked (DataRef set, Data empty), and does nothing otherwise.
// Replay, Tail, SessionEvents, WaitRun, Observe and remote.Serve do it for every
// event they hand over; FetchData is for events read by other means (a dead
// letter, a raw JetStream read). A ctx without deadline gets the default
// timeout (WithDefaultTimeout).
//
// The error wraps ErrClaimCheck and names the reference, with the cause:
// jetstream.ErrObjectNotFound when the object is gone (expired, deleted),
// a reference outside the bus' payloads bucket, or ctx's error.
func (b *Bus) FetchData(ctx context.Context, e *events.Event) error {
	if e == nil {
		return fmt.Errorf("%w: nil event", events.ErrMalformedEvent)
	}
	_, err := b.pay.Fetch(ctx, e)
	return err
}

// fill fetches the claim-checked data of an event an ordered read (Replay,
// Tail, WaitRun) is about to hand over. Data that is gone for good leaves e
// as it is, without data: the reader still gets the event (a session
// rebuild must know a tool.after is recorded even when its result is lost;
// e.DecodeData names the reference), counted in *unfetched and logged. A
// failure that may pass stops the read: the error wraps ErrClaimCheck.
func (b *Bus) fill(ctx context.Context, e *events.Event, unfetched *int) error {
	gone, err := b.pay.Fetch(ctx, e)
	if err == nil || !gone {
		return err
	}
	*unfetched++
	b.log.Warn("hookbus: event data gone; event handed over without it", "id", e.ID, "stage", e.Stage, "dataref", e.DataRef, "reason", err)
	return nil
}

// fetch fetches e's claim-checked data before the handler runs. Data gone
// for good is counted (ObserverStats.Unfetched) and logged, and the handler
// gets e without data; a failure that may pass is returned, so the event is
// delivered again after its back-off (and dead-lettered when the
// deliveries are used up).
func (o *Observer) fetch(e *events.Event) error {
	gone, err := o.b.pay.Fetch(o.ctx, e)
	if err == nil || !gone {
		return err
	}
	o.unfetched.Add(1)
	o.b.log.Warn("hookbus: event data gone; event handed over without it", "durable", o.cfg.Durable, "id", e.ID,
		"stage", e.Stage, "dataref", e.DataRef, "reason", err)
	return nil
}
