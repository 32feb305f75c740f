// Package hooks holds no code: its subpackages are the kinds of hook that
// hookbus runs itself, each an interceptors.Interceptor you register on a
// chain like any other.
//
//   - prompt: one model call answers Claude Code's {"ok": ..., "reason": ...},
//     with a decision cache shared by workers.
//   - agenthook: a sub-agent with read-only tools decides, its run recorded
//     as a child run of the run it decides on.
//   - command and httphook: Claude Code's command and http hooks, run as
//     Claude Code runs them.
//   - claudecode: Claude Code's hook protocol (its settings file, the input
//     a hook reads, the output it answers, matchers, transcripts), which
//     the others speak and the coding-agent bridge (package bridge) reads
//     from the other side.
//
// A hook kind stands above the decision model (package interceptors) and
// the engine (package loop), and beside the engine's providers and tools:
// it imports them, never the other way round. What it needs of the engine
// it declares where it is used (prompt.Model for a model call,
// claudecode.Conversations for a session's transcript) or, for the agent
// hook, builds itself: its read-only sub-agent is an engine of its own.
// The agents assembly (package agents) and the commands put them together.
// docs/ARCHITECTURE.md has the layers.
package hooks
