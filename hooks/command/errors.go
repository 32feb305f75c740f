package command

import "errors"

var (
	// ErrInvalidConfig is returned by New and Factory for a Config or
	// handler that cannot run: no root, a root that is not a directory, a
	// handler without a command, an unknown field, a bad environment entry.
	ErrInvalidConfig = errors.New("command hook: invalid config")
	// ErrConfig is ErrInvalidConfig.
	//
	// Deprecated: use ErrInvalidConfig.
	ErrConfig = ErrInvalidConfig
	// ErrStart is the failure of a hook whose process could not start (an
	// exec-form program that does not exist, say); the chain records it as
	// a hook.failed of kind "error".
	ErrStart = errors.New("command hook: cannot start")
	// ErrChanged is the failure of a hook whose command names a file in the
	// agent's root that changed since the hook was built (when the worker
	// started): its content, or that it existed. The hook does not run; on
	// an event that decides on a stage that accepts deny (PreToolUse,
	// UserPromptSubmit, SubagentStart) its answer is deny, elsewhere a
	// hook.failed of kind "error" records it.
	ErrChanged = errors.New("command hook: a file it runs changed since the worker started")
)
