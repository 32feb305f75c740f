package policies

import (
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
)

// Errors of the policy store. Those shared with the other bus packages are
// the same values, so errors.Is matches either name.
var (
	// ErrInvalidOption is returned by Sync for a nil chain, and by PutTest
	// for a result that is not JSON.
	ErrInvalidOption = bus.ErrInvalidOption
	// ErrRegistry is returned by every method of Store, and by Sync and
	// Synced, when the trust bucket cannot be opened, read or written
	// (the error names the bucket; a missing bucket means the bus was not
	// provisioned). It is remote.ErrRegistry.
	ErrRegistry = kvstore.ErrRegistry
	// ErrNotFound is returned by Get, Delete and GetTest for a name that
	// holds nothing.
	ErrNotFound = kvstore.ErrNotFound
	// ErrPermission is returned by Put and Delete when the connection's
	// user may not ask the server who it is (bus.WhoAmI), or may not write
	// the trust bucket (only the admin may: deploy/nats).
	ErrPermission = bus.ErrPermission
	// ErrUnreadable is returned by Record.Policy, and logged by Sync, for
	// a stored entry that does not decode or whose source is not the
	// policy the key names.
	ErrUnreadable = errors.New("hookbus: stored policy unreadable")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}
