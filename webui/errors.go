package webui

import "errors"

var (
	// ErrInvalidConfig is returned by New for a config it cannot serve
	// (no bus).
	ErrInvalidConfig = errors.New("webui: invalid config")
	// ErrReadOnly is the error of an answer posted to a server started
	// without AllowApprovals (HTTP 403).
	ErrReadOnly = errors.New("webui: read-only: start observer ui with --allow-approvals to answer approvals")
	// ErrUnauthenticated refuses an answer that came with no
	// authenticated identity: the server was not served behind the
	// listener of observer ui (HTTP 403).
	ErrUnauthenticated = errors.New("webui: no authenticated identity to record the answer under: serve the page through observer ui's listener")
	// ErrBadRequest wraps what is wrong with a request's parameters or
	// body (HTTP 400).
	ErrBadRequest = errors.New("webui: bad request")
	// ErrNotFound is returned for a run the stream holds no event of
	// (HTTP 404).
	ErrNotFound = errors.New("webui: not found")
	// ErrConflict is returned for an answer to a run or call that waits for
	// none (HTTP 409).
	ErrConflict = errors.New("webui: conflict")
	// errScanLimit stops a replay that read Config.MaxScan events.
	errScanLimit = errors.New("webui: scan limit reached")
)

// errBusy refuses a live stream beyond Config.MaxLive (HTTP 503).
var errBusy = errors.New("webui: too many live streams open; close a tab or try again")
