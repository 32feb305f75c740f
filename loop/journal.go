package loop

import (
	"context"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// Emitter appends a run's events to the record of its session. *bus.Bus
// implements it.
//
// Every append is fenced (one writer per session): it is stored only while
// the session's last run.started is the one at stream sequence claim (0:
// while the session has none). Each attempt of a run claims the session
// with its run.started (Claim, on condition that the session's last claim
// is still the one the attempt read), and appends everything else on its
// own claim, so once another attempt has claimed the session nothing the
// old attempt sends is stored. A refused append or claim returns (or, for
// Append, Flush returns) an error for which errors.As finds a Claimed
// naming the run.started that claimed the session since.
type Emitter interface {
	// Append appends e asynchronously; failures surface at Flush. An error
	// it returns itself means e was not sent, so never stored.
	Append(ctx context.Context, e *events.Event, claim uint64) error
	// AppendSync returns once e is stored.
	AppendSync(ctx context.Context, e *events.Event, claim uint64) error
	// Claim appends e, the attempt's run.started, on condition that the
	// session's last claim is last, and returns e's stream sequence: the
	// attempt's claim.
	Claim(ctx context.Context, e *events.Event, last uint64) (claim uint64, err error)
	// Reclaim is Claim for an attempt that resumes a run an earlier attempt
	// claimed, and that appended nothing before its claim: it appends e on
	// condition, besides Claim's, that nothing was stored on the session
	// after stream sequence seen (the last event of the session the
	// attempt read). An earlier attempt still alive cannot then write
	// between this attempt's read and its claim: the claim is refused (a
	// Claimed naming the session's last claim) and the attempt reads again.
	Reclaim(ctx context.Context, e *events.Event, last, seen uint64) (claim uint64, err error)
	// AppendAfter appends e, not fenced on a claim but on condition that
	// the session's last stored message is at stream sequence seen (the
	// session as the caller read it), returns once e is stored, and returns
	// its stream sequence. The loop closes a run's record this way after
	// its appends failed or were refused (docs/PROTOCOL.md, "One writer per
	// session"): e is derived from what is stored, and nothing can be
	// stored in between. When something was stored on the session since
	// seen, it returns an error for which errors.As finds a Claimed naming
	// the first event stored since: read the session again.
	AppendAfter(ctx context.Context, e *events.Event, seen uint64) (uint64, error)
	// Flush returns once every earlier append of the run is stored, or
	// with the first failure since the previous Flush.
	Flush(ctx context.Context, runID string) error
}

// History reads a session's events back, in stream order, each with its
// stream sequence. *bus.Bus implements it.
type History = record.History

// Claimed is the error of an append or claim refused because another
// attempt claimed the session (*bus.FencedError is one): ClaimedBy is that
// attempt's run.started, its Stored field the claim.
type Claimed interface {
	error
	ClaimedBy() *events.Event
}
