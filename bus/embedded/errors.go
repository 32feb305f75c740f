package embedded

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error Start and OpenStore return wraps one of these
// (or a context error), so callers match them with errors.Is.
var (
	// ErrInvalidConfig is returned by Start when a Config field is missing
	// or malformed (no store directory, a bad listen address).
	ErrInvalidConfig = errors.New("hookbus: invalid embedded server config")
	// ErrAddrInUse is returned by Start when the listen address is already
	// taken by another process or server.
	ErrAddrInUse = errors.New("hookbus: listen address in use")
	// ErrStoreLocked is returned by Start and OpenStore when another running
	// server (in this process or another) holds the store directory.
	ErrStoreLocked = errors.New("hookbus: store directory locked by another server")
	// ErrNoStore is returned by OpenStore when the directory holds no
	// JetStream data.
	ErrNoStore = errors.New("hookbus: no JetStream store in directory")
	// ErrServerStart is returned by Start and OpenStore when nats-server
	// fails to start or to become ready in time.
	ErrServerStart = errors.New("hookbus: embedded server did not start")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}
