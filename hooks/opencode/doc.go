// Package opencode is OpenCode's and Kilo Code's hook protocol as the
// bridge speaks it (loop gateway --harness opencode,kilo; loop agent-hook
// --harness opencode|kilo). Neither CLI runs command hooks: their hooks are
// JavaScript plugins, and hookbus' plugin (sdk/opencode-plugin) posts each
// hook to loop gateway over one kept-alive HTTP connection, as Claude
// Code's hook input (package hooks/claudecode) named by the Claude Code
// event it stands for: chat.message as UserPromptSubmit,
// tool.execute.before as PreToolUse, tool.execute.after as PostToolUse,
// and the session events (session.created, session.idle, session.error,
// session.deleted) as SessionStart, Stop, StopFailure and SessionEnd.
//
// The answer is the plugin's own small JSON object (Answer): block, the
// reason the plugin throws (a thrown error's message is what the model is
// told), args, the tool call's arguments as rewritten, context, text added
// to a tool's output, and warnings for the person.
//
//	in, err := opencode.OpenCode.Parse(body)
//	m, err := in.Map()        // PreToolUse: tool.before, its action from OpenCode's tool table
//	reply, err := in.Answer(&harness.Outcome{Chain: result})
//
// docs/OPENCODE.md has the plugin's setup, docs/PROTOCOL.md the wire.
package opencode
