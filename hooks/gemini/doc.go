// Package gemini is Gemini CLI's hook protocol as the bridge speaks it
// (loop agent-hook --harness gemini): the hook input Gemini CLI writes on
// a command hook's stdin, the hookbus stage each of its events is recorded
// as, and the JSON it reads back. Harness is the harness.Protocol.
//
//	in, err := gemini.Harness{}.Parse(stdin)
//	m, err := in.Map()        // BeforeTool: tool.before; AfterModel: nil (a harness.event)
//	reply, err := in.Answer(&harness.Outcome{Chain: result})
//
// Gemini CLI runs command hooks only; a hook's timeout in its settings is
// in milliseconds (60 s by default). It reads stdout as JSON (stderr when
// stdout is empty), and exit status 2 as a block with stderr as the
// reason; its calls carry no tool-call id. docs/PROTOCOL.md, "Coding
// agents on the bus", has the event table and the answers.
package gemini
