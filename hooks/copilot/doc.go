// Package copilot is GitHub Copilot CLI as a harness of the bridge (loop
// agent-hook --harness copilot). Copilot CLI reads hooks from
// .github/hooks/*.json of a trusted folder; with PascalCase event names
// (PreToolUse, ...) it sends Claude Code's input and takes Claude Code's
// answer (hookSpecificOutput.permissionDecision), which this harness reads
// and words with hooks/claudecode (claudecode.Variant). Its camelCase
// events (preToolUse, ...) and its PermissionRequest send Copilot CLI's own
// input (sessionId, toolName, toolArgs): they are recorded as a
// harness.event and answered with nothing. A deny is always answered in
// JSON with exit status 0: Copilot CLI blocks on exit status 2 but drops
// its reason. docs/CODING_AGENTS.md has the settings.
package copilot
