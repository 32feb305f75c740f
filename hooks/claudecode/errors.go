package claudecode

import "errors"

var (
	// ErrUnmapped is returned by NewInput for an event whose stage does not
	// fire the Claude Code event asked for, and by Input.ToHookbus for a
	// Claude Code event hookbus records as no stage.
	ErrUnmapped = errors.New("claudecode: event not mapped")
	// ErrHookExit is the failure of a hook that exited with a status other
	// than 0 and 2: Claude Code's non-blocking error. Decide returns it; the
	// chain records it as a hook.failed of kind "error" and, under the
	// default policy, goes on.
	ErrHookExit = errors.New("claudecode: hook exited with an error")
	// ErrSettings is returned by ParseSettings, LoadSettings and Register
	// for a settings file hookbus cannot load; the message names the file,
	// the place in it and what is wrong.
	ErrSettings = errors.New("claudecode: bad settings")
)
