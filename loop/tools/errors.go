package tools

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrArguments is returned by a tool given arguments it cannot use:
	// invalid JSON, a missing required field, a field of the wrong type, an
	// unknown field, or a value out of range. The message names the tool and
	// what is wrong.
	ErrArguments = errors.New("tools: bad tool arguments")
	// ErrPathEscape is returned by the file tools (Read, Write, Edit, Glob,
	// Grep, read_file) for a path outside the root directory: "..", an
	// absolute path elsewhere, or a symlink pointing out. The message names
	// the path.
	ErrPathEscape = errors.New("tools: path escapes the root directory")
	// ErrNotRegular is returned by Read, Write, Edit, Grep and read_file for
	// a path that is neither a regular file nor a directory: a named pipe
	// (FIFO), a device or a socket, refused without being opened for
	// reading or writing (so without blocking). The message names the path
	// and what it is. Glob and Grep skip such entries when they walk a
	// directory, and say so in their result.
	ErrNotRegular = errors.New("tools: not a regular file or directory")
	// ErrHardLink is returned by Read, Write, Edit, Grep and read_file
	// for a regular file with more than one hard link, refused without
	// being read or written: another of its names may be outside the root
	// (a hard link made inside it to a file elsewhere), and a link says
	// nothing of where its file lies. The message names the path and the
	// link count.
	ErrHardLink = errors.New("tools: file has more than one hard link")
	// ErrInvalidConfig is returned by NewFS, NewBash, ByName and ByNames
	// for a configuration they cannot build a tool from.
	ErrInvalidConfig = errors.New("tools: invalid tool config")
	// ErrConfig is ErrInvalidConfig.
	//
	// Deprecated: use ErrInvalidConfig.
	ErrConfig = ErrInvalidConfig
	// ErrUnknownTool is returned by ByName and ByNames for a name that is not
	// a built-in tool; the message names it and lists the known names.
	ErrUnknownTool = errors.New("tools: unknown tool")
	// ErrNoMatch is returned by Edit when old_string is not in the file.
	ErrNoMatch = errors.New("tools: old_string not found")
	// ErrNotUnique is returned by Edit when old_string occurs more than once
	// and replace_all is false.
	ErrNotUnique = errors.New("tools: old_string is not unique")
	// ErrExitStatus is wrapped by the *CommandError of a Bash command that
	// exited with a status other than 0.
	ErrExitStatus = errors.New("tools: command exited with non-zero status")
	// ErrTimeout is wrapped by the *CommandError of a Bash command killed
	// because its timeout passed.
	ErrTimeout = errors.New("tools: command timed out")
)

// CommandError is the error of a Bash command that did not exit with status
// 0: it exited non-zero (errors.Is ErrExitStatus), its timeout passed
// (ErrTimeout) or its ctx ended (context.Canceled or
// context.DeadlineExceeded). Its message is what the model sees: the reason
// on the first line ("Exit code 2", as Claude Code reports it), then the
// command's output, capped like a successful result.
type CommandError struct {
	// ExitCode is the shell's exit status; -1 when it was killed.
	ExitCode int
	// Output is the command's capped, interleaved stdout and stderr.
	Output string
	// After is how long the command ran before it was killed (timeout or ctx).
	After time.Duration
	// Err is ErrExitStatus, ErrTimeout or the ctx's error.
	Err error
}

func (e *CommandError) Error() string {
	var head string
	switch {
	case errors.Is(e.Err, ErrExitStatus):
		head = fmt.Sprintf("Exit code %d", e.ExitCode)
	case errors.Is(e.Err, ErrTimeout):
		head = fmt.Sprintf("Command timed out after %v and was killed", e.After)
	default:
		head = fmt.Sprintf("Command was aborted before completion (%v) and was killed", e.Err)
	}
	if e.Output == "" {
		return head
	}
	return head + "\n" + e.Output
}

func (e *CommandError) Unwrap() error { return e.Err }
