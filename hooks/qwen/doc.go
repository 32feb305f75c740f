// Package qwen is Qwen Code as a harness of the bridge (loop agent-hook
// --harness qwen, or loop gateway's /hooks/qwen for its http hooks). Qwen
// Code's hooks take Claude Code's events, inputs and answers
// (claudecode.Variant). On a turn that only returns tool results it fires
// UserPromptSubmit again with an empty prompt: that is no new prompt, and
// is recorded as a harness.event in the run it belongs to. Qwen Code runs
// the model's call whatever a PreToolUse answer's updatedInput says: a
// call the interceptors rewrote is denied, the model told the rewritten
// arguments.
// docs/CODING_AGENTS.md has the settings.
package qwen
