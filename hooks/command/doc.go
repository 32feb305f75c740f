// Package command runs Claude Code command hooks as hookbus interceptors,
// exactly as Claude Code runs them, so their scripts work unchanged: the
// hook runs with sh -c in the agent's root (or, with "args", as a program
// and its arguments), reads Claude Code's hook input JSON on stdin
// (claudecode.NewInput), finds the root in CLAUDE_PROJECT_DIR and the
// session's JSONL transcript at transcript_path, and answers by its exit
// status and output (claudecode.Decide): exit 0 with JSON output (or
// none), exit 2 to block with stderr as the reason, any other status a
// non-blocking error (hook.failed; the action proceeds).
//
// Its environment is minimal (PATH, HOME, ... and CLAUDE_PROJECT_DIR; the
// worker's keys stay out). It runs in a process group of its own: at its
// timeout (the chain's deadline, from the settings file, 600s by default)
// the whole group gets SIGTERM and, after a grace, SIGKILL, so a script
// that ignores SIGTERM and the children it forked are gone; processes left
// in the group when the hook exits are killed too. Output over the cap is
// cut and said to be.
//
// A hook runs outside any sandbox, so the files its command names inside
// the agent's root (a script at "$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh,
// the script an interpreter is given) are pinned when the hook is built,
// by their SHA-256, or as absent for a script not there yet; a hook whose
// files changed since does not run (ErrChanged): on a stage that accepts
// deny it denies, naming the file. See docs/SECURITY.md.
//
// Build hooks from a settings file with Factory and claudecode.Register:
//
//	transcripts, err := claudecode.NewTranscripts(loop.Conversations{History: history}, "")
//	hooks, err := claudecode.Register(chain, []*claudecode.Settings{s}, claudecode.Options{
//		Factories: map[string]claudecode.Factory{
//			claudecode.TypeCommand: command.Factory(command.Config{Root: root, Transcripts: transcripts}),
//		},
//	})
//
// or one hook with New and register it yourself.
package command
