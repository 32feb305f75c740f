package tools

import "errors"

var (
	// ErrArguments is returned by a tool given arguments it cannot use.
	ErrArguments = errors.New("tools: bad tool arguments")
	// ErrPathEscape is returned for a path outside the tool's root directory.
	ErrPathEscape = errors.New("tools: path escapes the root directory")
)
