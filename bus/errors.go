package bus

import (
	"errors"

	"github.com/hookbus/hookbus/bus/internal/claimcheck"
)

// Sentinel errors. Every error a bus method returns wraps one of these (or a
// context error, or an events error such as events.ErrInvalidID), so callers
// match them with errors.Is. The packages built on the bus (bus/remote,
// bus/runs, bus/budgets) return several of them too, under the same names:
// the same values.
var (
	// ErrInvalidOption is returned by New, Observe and DeadLetter when an
	// option or config field is out of range (and by the Serve and Consume
	// functions of the packages built on the bus).
	ErrInvalidOption = errors.New("hookbus: invalid option")
	// ErrProvision is returned by Provision when a stream, bucket or object
	// store cannot be created or updated.
	ErrProvision = errors.New("hookbus: provisioning failed")
	// ErrNotProvisioned is returned by CheckProvisioned when a stream,
	// bucket or object store is missing.
	ErrNotProvisioned = errors.New("hookbus: not provisioned")
	// ErrFenced is returned by Claim, AppendSync and Flush (for an Append)
	// when another attempt has claimed the session since the caller's
	// claim: the caller no longer owns the session and nothing more of it
	// is stored. The error is a *FencedError naming the claim. AppendAfter
	// returns it when the session changed since the caller read it.
	ErrFenced = errors.New("hookbus: session claimed by another attempt")
	// ErrPermission is returned when the server refuses what the caller's
	// user may not do (WhoAmI without the right to ask; remote.Serve on a
	// subject outside its permissions).
	ErrPermission = errors.New("hookbus: permission denied")
	// ErrPublish is returned by Publish, PublishSync, Flush and DeadLetter
	// when JetStream did not store a message (no stream, timeout after
	// retries, rejected by the server).
	ErrPublish = errors.New("hookbus: publish failed")
	// ErrDuplicate is returned by PublishSync, AppendSync, Claim and Flush
	// when JetStream reports the FIRST send of an event as a duplicate:
	// another publisher stored a message under the event's id before it,
	// so the event itself was not stored.
	ErrDuplicate = errors.New("hookbus: event id already stored by another publisher")
	// ErrPayloadTooLarge is returned by Publish and PublishSync when an
	// event exceeds the bus' payload limit (see WithMaxPayload) even
	// without its data: larger data is claim-checked, not refused.
	ErrPayloadTooLarge = claimcheck.ErrPayloadTooLarge
	// ErrClaimCheck is returned (wrapped, naming the event and the
	// reference) when the data of an event too large for a message cannot
	// be stored in the payloads object store (Publish, PublishSync: with
	// ErrPublish; a remote.Client request) or fetched back (FetchData; Replay,
	// Tail, SessionEvents and WaitRun when the failure may pass: data gone
	// for good is not an error of the read, see ReplayStats.Unfetched).
	ErrClaimCheck = claimcheck.ErrClaimCheck
	// ErrConsumer is returned by Observe, Replay, Tail and WaitRun when the
	// JetStream consumer cannot be created or fails.
	ErrConsumer = errors.New("hookbus: consumer failed")
	// ErrBehind is returned, with ErrConsumer, by Replay, SessionEvents,
	// RunEvents and ReadStream when no replica of the events stream
	// delivered everything the stream's leader had stored when the read
	// began, for the bus' timeout (a cluster whose replicas are catching
	// up): the read fails rather than return less. Read again.
	ErrBehind = errors.New("hookbus: the replica serving the read is behind the stream's leader")
)
