package agents

import "errors"

var (
	// ErrInvalid is returned by Load and Parse for a definitions file that
	// does not parse or check; the error names the file, the line, the
	// agent and the field.
	ErrInvalid = errors.New("agents: invalid agent definition")
	// ErrUnknownAgent is returned for an agent id the file does not define.
	ErrUnknownAgent = errors.New("agents: unknown agent")
	// ErrBuild is returned by Agent.Build when a part of the agent cannot be
	// made: the model (a missing key), the tools (a missing root), an MCP
	// server that does not start.
	ErrBuild = errors.New("agents: cannot build the agent")
)
