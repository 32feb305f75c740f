package agenthook

import "errors"

var (
	// ErrInvalidConfig is returned by New for a configuration it cannot run
	// with (no prompt, model, emitter or history; an unknown tool; a
	// negative bound); the message names the field.
	ErrInvalidConfig = errors.New("agent hook: invalid config")
	// ErrWriteTool is returned by New (with ErrInvalidConfig) when the
	// allowed tools name one that can change anything: Bash, Write, Edit,
	// Task, an MCP tool (mcp__*), or any tool not known to be read-only.
	ErrWriteTool = errors.New("agent hook: a tool that is not read-only")
)
