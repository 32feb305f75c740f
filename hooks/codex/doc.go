// Package codex is Codex CLI's hook protocol as the bridge speaks it (loop
// agent-hook --harness codex). Codex CLI's hooks take Claude Code's format
// (package hooks/claudecode) with additions to the input (turn_id, model,
// permission_mode, tool_use_id), events of its own (Interrupt,
// PreModelRequest) and stricter output: it refuses a field it does not
// know, permissionDecision ask, continue false, stopReason and
// suppressOutput on PreToolUse, an updatedInput without
// permissionDecision allow, and updatedInput on a PermissionRequest.
// Harness is the harness.Protocol; Answer words hookbus' outcome within
// those rules.
//
//	in, err := codex.Harness{}.Parse(stdin)
//	m, err := in.Map()        // PreToolUse: tool.before; Interrupt: run.completed
//	reply, err := in.Answer(&harness.Outcome{Chain: result})
//
// docs/PROTOCOL.md, "Coding agents on the bus", has the event table.
package codex
