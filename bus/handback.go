package bus

import (
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// handBacks is what a stopping observer owes the durable's next observer:
// the events it received and will not handle (buffered ones, and the
// running handler's should it fail meanwhile), and the events it failed
// earlier that have not come back to it. Once its subscription has ended,
// the observer NAKs them all with the short handBackDelay, in stream order,
// so that the next observer starts with them at once and in order, instead
// of waiting for AckWait (or the back-offs) with later events handled
// first. A delay rather than none: a NAK with a delay also takes an event
// off the server's redelivery queue (where a back-off that ran out after
// the subscription ended put it, ahead of the others), and the server
// queues the events whose delays have ended in stream order.
// It is guarded by the observer's mu.
type handBacks struct {
	kept    map[uint64]jetstream.Msg // by stream sequence: received while stopping
	delayed map[uint64]delayedEvent  // by stream sequence: NAKed with a back-off
	ended   bool                     // the subscription has ended: NAK at once
}

// delayedEvent is an event NAKed with a back-off: the server delivers it
// again at due.
type delayedEvent struct {
	m   jetstream.Msg
	due time.Time
}

// handBackDelay is the delay of a hand-back NAK.
const handBackDelay = time.Millisecond

// handBackRecent is how long after its back-off a failed event that has not
// come back is still handed back: one whose back-off ended earlier went to
// another observer of the durable (an observer that runs gets its due
// events at once), and handing it back would have it delivered twice.
const handBackRecent = time.Second

// delivered notes that the event seq was delivered again: an earlier
// delivery of it is no longer this observer's to hand back.
func (h *handBacks) delivered(seq uint64) {
	delete(h.delayed, seq)
}

// delay notes that the event seq was NAKed with a back-off until due. Past
// limit entries, those already due (delivered again, here or to another
// observer of the durable) are forgotten.
func (h *handBacks) delay(seq uint64, m jetstream.Msg, due time.Time, limit int) {
	if h.delayed == nil {
		h.delayed = map[uint64]delayedEvent{}
	}
	if len(h.delayed) >= limit {
		now := time.Now()
		for s, d := range h.delayed {
			if !d.due.After(now) {
				delete(h.delayed, s)
			}
		}
	}
	h.delayed[seq] = delayedEvent{m: m, due: due}
}

// keep notes an event received while stopping, the latest delivery of seq.
func (h *handBacks) keep(seq uint64, m jetstream.Msg) {
	if h.kept == nil {
		h.kept = map[uint64]jetstream.Msg{}
	}
	delete(h.delayed, seq)
	h.kept[seq] = m
}

// take ends the hand-back: it returns what to NAK, in stream order: the
// kept events, and the delayed ones not due at now or due only recently
// (see handBackRecent).
func (h *handBacks) take(now time.Time) []jetstream.Msg {
	h.ended = true
	seqs := make([]uint64, 0, len(h.kept)+len(h.delayed))
	for s := range h.kept {
		seqs = append(seqs, s)
	}
	for s, d := range h.delayed {
		if _, dup := h.kept[s]; !dup && d.due.After(now.Add(-handBackRecent)) {
			seqs = append(seqs, s)
		}
	}
	slices.Sort(seqs)
	out := make([]jetstream.Msg, len(seqs))
	for i, s := range seqs {
		if m, ok := h.kept[s]; ok {
			out[i] = m
		} else {
			out[i] = h.delayed[s].m
		}
	}
	h.kept, h.delayed = nil, nil
	return out
}
