// Package harness is what the bridge (package bridge: loop agent-hook, loop
// gateway) needs of a coding agent's hook protocol. A harness is a coding
// agent that runs its own loop and calls hooks at its own events: Claude
// Code (package hooks/claudecode), Gemini CLI (hooks/gemini) and Codex CLI
// (hooks/codex). Each package reads its harness's hook input (Protocol.Parse),
// says which hookbus stage an event is recorded as (Input.Map; an event no
// stage stands for is recorded as a harness.event), how long the harness
// waits for the hook (Input.Limit), and words what hookbus decided as the
// harness's own output (Input.Answer, Input.Outage).
//
//	in, err := proto.Parse(stdin)          // proto: claudecode.Harness{}, gemini.Harness{}, codex.Harness{}
//	m, err := in.Map()                     // m.Stage, m.Subject, m.Payload; nil for a harness event
//	reply, err := in.Answer(&harness.Outcome{Chain: result})
//	os.Stdout.Write(reply.Stdout)          // and exit with reply.Exit
//
// What a chain's decision means on each stage is said once, by Say; a
// harness's Words put each thing it says (deny, ask, stop, the rewritten
// call, ...) in its own output format.
//
// docs/PROTOCOL.md, "Coding agents on the bus", has each harness's event
// table and output rules.
package harness
