// Package factory is Factory Droid as a harness of the bridge (loop
// agent-hook --harness factory). Droid's hooks take Claude Code's events,
// inputs and answers (claudecode.Variant); its shell tool is Execute.
// Headless, droid exec fires no UserPromptSubmit: the session's run opens
// on SessionStart (or on its first event), without a prompt.
// docs/CODING_AGENTS.md has the settings.
package factory
