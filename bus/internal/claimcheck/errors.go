package claimcheck

import "errors"

// Errors of the claim check. package bus declares them as its own
// (bus.ErrClaimCheck, bus.ErrPayloadTooLarge): the same values.
var (
	// ErrClaimCheck is returned by Fit, PutData and Fetch when data cannot
	// be stored in the payloads object store or fetched back; the error
	// names the event or the object and the reference.
	ErrClaimCheck = errors.New("hookbus: claim check failed")
	// ErrPayloadTooLarge is returned by Fit when an event does not fit the
	// payload limit even without its data.
	ErrPayloadTooLarge = errors.New("hookbus: event payload too large")
)
