package mcp

import (
	"errors"
	"strings"
)

var (
	// ErrInvalidConfig is returned by Connect, ConnectAll and
	// ServerConfig.Validate for a server config that cannot be used; the
	// message names the server and the field.
	ErrInvalidConfig = errors.New("mcp: invalid server config")
	// ErrStart is the Kind of an *Error when the server could not be started
	// or reached, or did not complete the MCP handshake or the tool listing
	// (Connect, or a Call that had to reconnect).
	ErrStart = errors.New("mcp: cannot start or reach the server")
	// ErrConnectionLost is the Kind of an *Error when the server died, closed
	// the connection or became unreachable during a call. The next call
	// reconnects.
	ErrConnectionLost = errors.New("mcp: connection to the server lost")
	// ErrTimeout is the Kind of an *Error when a call took longer than the
	// server's Timeout. The session is dropped (a stdio server is killed);
	// the next call reconnects.
	ErrTimeout = errors.New("mcp: call timed out")
	// ErrProtocol is the Kind of an *Error when the server answered a call
	// with a JSON-RPC error (an unknown tool, bad parameters) or with a
	// result that does not parse.
	ErrProtocol = errors.New("mcp: protocol error")
	// ErrToolError is the Kind of an *Error when the tool ran and reported a
	// failure (a result with isError true); the error carries the tool's
	// text.
	ErrToolError = errors.New("mcp: tool returned an error")
	// ErrArguments is the Kind of an *Error when a call's arguments are not
	// a JSON object; nothing was sent.
	ErrArguments = errors.New("mcp: arguments are not a JSON object")
	// ErrClosed is the Kind of an *Error for a call after Close.
	ErrClosed = errors.New("mcp: server closed")
	// ErrNoServer is returned by Servers.CallTool for a server the agent
	// does not have.
	ErrNoServer = errors.New("mcp: no such server")
)

// Error is the error of a failed MCP call or connection. It names the server
// and the tool; Kind says what went wrong and is matched with errors.Is:
//
//	if errors.Is(err, mcp.ErrTimeout) { ... }
//
// A Call returns it as the tool's error, so the model reads its message and
// the engine publishes it in tool.failed.
type Error struct {
	// Server is the server's configured name.
	Server string
	// Tool is the tool's name on the server (not the mcp__ name); empty
	// for an error of the connection itself (Connect).
	Tool string
	// Kind is one of this package's sentinels (ErrStart,
	// ErrConnectionLost, ErrTimeout, ErrProtocol, ErrToolError,
	// ErrArguments, ErrClosed) or the caller's context error.
	Kind error
	// Err is the cause: the server's text for ErrToolError, the transport's
	// or the server's error otherwise. It may be nil.
	Err error
	// Stderr is the end of a stdio server's standard error when the server
	// failed to start or died: usually the reason.
	Stderr string
}

// Error says which server and tool failed, how, and why:
// "mcp server files, tool delete: call timed out: after 30s".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("mcp server ")
	b.WriteString(e.Server)
	if e.Tool != "" {
		b.WriteString(", tool ")
		b.WriteString(e.Tool)
	}
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Kind.Error(), "mcp: "))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Stderr != "" {
		b.WriteString(" (stderr: ")
		b.WriteString(e.Stderr)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns Kind and Err, so errors.Is matches either.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}
