// Package cline is Cline (the cline CLI) as a harness of the bridge (loop
// agent-hook --harness cline). Cline runs an executable file named after
// each hook event (~/.cline/hooks/PreToolUse, .clinerules/hooks/...), its
// input on stdin in Cline's own schema (taskId, hookName, and an object
// named after the event: preToolUse, postToolUse, taskStart, ...); the
// session is the task (taskId). It reads its answer from stdout: cancel,
// errorMessage, context (added as a user message) and overrideInput (the
// tool's input replaced).
//
// A deny must not end the run, and the model must learn why: a denied
// shell call (run_commands, execute_command) has its input replaced by a
// command that prints the reason and fails, the reason also given as
// context; Cline's cancel ends the whole run without telling the model, so
// it answers only a stop, a denied prompt, and a denied call of a tool
// whose input cannot be replaced so. Headless, Cline fires no
// UserPromptSubmit: the run opens on TaskStart.
package cline
