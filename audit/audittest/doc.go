// Package audittest gives tests of the auditor's views a deterministic
// multi-run stream: the recorded histories of loop/testdata/histories
// (runs with hooks that modify, mock and deny, a hook failing closed,
// approvals, sub-agents and compactions) joined into one stream, as the
// events stream would hold them.
//
//	evs := audittest.Stream(t)             // the default histories, joined
//	var runs audit.Runs
//	for _, e := range evs { runs.Add(e) }
//
// Fleet is a history of the four harnesses on one bus (hookbus' own
// agent, and Claude Code, Gemini CLI and Codex CLI bridged), each with its
// own tool names for the same calls: a destructive shell command, harmless
// ones, a read of .env and a fetch; what policy tests replay.
package audittest
