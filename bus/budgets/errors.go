package budgets

import (
	"fmt"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
)

// Errors of the shared budgets. They are the values of package bus and
// bus/remote of the same name, so errors.Is matches either name.
var (
	// ErrInvalidOption is returned by Limit.Validate and SetLimit for a
	// limit out of range (the error names the field).
	ErrInvalidOption = bus.ErrInvalidOption
	// ErrRegistry is returned by every method of Budgets when the budgets
	// bucket cannot be opened, read or written, or holds an entry that does
	// not parse (the error names the bucket or the key; a missing bucket
	// means the bus was not provisioned). It is remote.ErrRegistry: the
	// budgets and the interceptor registry are KV buckets alike.
	ErrRegistry = kvstore.ErrRegistry
	// ErrNotFound is returned by RemoveLimit for an agent with no budget.
	ErrNotFound = kvstore.ErrNotFound
	// ErrPermission is returned by SetLimit and RemoveLimit when the
	// connection's user may not ask the server who it is (bus.WhoAmI).
	ErrPermission = bus.ErrPermission
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}
