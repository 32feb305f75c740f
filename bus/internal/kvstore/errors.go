package kvstore

import "errors"

// Errors of the KV buckets. bus/remote and bus/budgets declare them as their
// own (remote.ErrRegistry, budgets.ErrRegistry, ...): the same values.
var (
	// ErrRegistry is returned by Open and DeleteWithRecord when a bucket
	// cannot be opened, read or written (the error names the bucket; a
	// missing bucket means the bus was not provisioned).
	ErrRegistry = errors.New("hookbus: registry unavailable")
	// ErrNotFound is returned by DeleteWithRecord for a key that holds no
	// value.
	ErrNotFound = errors.New("hookbus: not found")
)
