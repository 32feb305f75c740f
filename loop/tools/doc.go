// Package tools holds the tools an agent run by package loop can call.
//
// The built-in tools carry the names and argument schemas of Claude Code's,
// so that hook scripts and matchers written for Claude Code ("Bash",
// "Edit|Write", tool_input.file_path, tool_input.command) work unchanged on
// hookbus:
//
//   - Bash {command, description, timeout}: a shell command in the agent's
//     root directory, in its own process group, with a minimal environment;
//     the whole group is killed when the command ends, times out or the
//     run's ctx ends. Not idempotent unless BashConfig.Idempotent says so.
//     Not confined unless BashConfig.Sandbox puts each command under
//     bubblewrap (the root read-write, the system directories read-only,
//     nothing else, no network, no capability and no uid 0 even for a
//     root worker): docs/SECURITY.md.
//   - Read {file_path, offset, limit}: a text file, line-numbered (cat -n).
//   - Write {file_path, content}: creates or replaces a file, atomically.
//   - Edit {file_path, old_string, new_string, replace_all}: exact string
//     replacement; old_string must be unique unless replace_all.
//   - Glob {pattern, path}: files by name ("**/*.go"), newest first.
//   - Grep {pattern, path, glob, type, output_mode, -i, -n, -A, -B, -C,
//     head_limit, multiline, ...}: a content search with Go's regexp (RE2).
//
// The file tools are confined to the root directory with os.Root: a path
// may be absolute inside the root or relative to it; "..", an absolute path
// elsewhere or a symlink pointing out is an error wrapping ErrPathEscape.
// They use regular files and directories only: a FIFO, a device or a
// socket is refused (ErrNotRegular) without being opened for reading or
// writing, so no call waits on one, and Glob and Grep skip those they meet,
// naming them in a note.
// Read, Write, Glob and Grep are idempotent; Edit is not. docs/AGENTS.md
// ("Tools") has the schemas, result formats and rules in full.
//
// An agent definition names its tools; ByNames builds them:
//
//	ts, err := tools.ByNames([]string{"Bash", "Read", "Edit", "Grep"}, tools.Config{
//		Root: "/srv/agent/work",
//		Bash: tools.BashConfig{Env: []string{"GOPATH", "CI=1"}},
//	})
//	eng, err := loop.New(loop.Config{..., Tools: ts})
//
// NewFS and NewBash build the same tools directly. The demo tools need
// nothing: Clock, Calculator and ReadFile; Builtin returns all three.
package tools
