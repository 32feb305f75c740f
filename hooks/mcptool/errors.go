package mcptool

import "errors"

var (
	// ErrConfig is returned by New and the Factory for a handler hookbus
	// cannot run (no server or tool, a server the agent does not have, an
	// unknown field); the message names what is wrong.
	ErrConfig = errors.New("mcp_tool hook: bad handler")
	// ErrToolFailed is the failure of a hook whose tool failed or reported
	// an error: Claude Code's non-blocking error. The chain records it as
	// a hook.failed and, under the default policy, goes on.
	ErrToolFailed = errors.New("mcp_tool hook: the tool failed")
)
