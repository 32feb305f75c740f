package remote

import (
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
)

// Errors of the registry, trust grants and decision cache. A failed call
// of a remote interceptor is an *interceptors.CallError instead, whose kind
// matches interceptors.ErrTimeout, ErrNoResponders, ErrBadReply or
// ErrHookError.
var (
	// ErrRegistry is returned by the Registry methods, WatchTrust,
	// Trust.Synced, SyncHooks and HookSync.Synced when the registry or
	// trust bucket cannot be opened, read or written, or a watch of it
	// ended (the error names the bucket; a missing bucket means the bus
	// was not provisioned). It is budgets.ErrRegistry too.
	ErrRegistry = kvstore.ErrRegistry
	// ErrNotFound is returned by Registry.Get and Registry.Delete for a
	// stage and plugin with no registration, by Registry.Revoke for a
	// plugin with no grant, and by Registry.Enable for a plugin that is
	// not disabled.
	ErrNotFound = kvstore.ErrNotFound
	// ErrDecisionCache is returned by DecisionCache.Get and Put when the
	// decision bucket cannot be opened, read or written, or for a bad key
	// or TTL (the error names the bucket or the key).
	ErrDecisionCache = errors.New("hookbus: decision cache unavailable")
)

// Errors of package bus that this package's functions return too: the same
// values, so errors.Is matches either name.
var (
	// ErrInvalidOption is returned by Serve and SyncHooks for a bad config
	// (naming the field).
	ErrInvalidOption = bus.ErrInvalidOption
	// ErrPermission is returned by Serve when the server refuses the
	// subscription to an endpoint's subject (a privileged stage needs a
	// privileged user), and by Registry.Disable and Enable when the
	// connection's user may not ask the server who it is (bus.WhoAmI).
	ErrPermission = bus.ErrPermission
	// ErrClaimCheck is wrapped by the CallError of a Client whose request
	// is too large for a message and whose data cannot be stored in the
	// payloads object store (see bus.ObjectName).
	ErrClaimCheck = bus.ErrClaimCheck
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}
