// Package claudecode is Claude Code's hook protocol, both ways, and its
// settings file, so that the hooks people already wrote for Claude Code
// run on hookbus agents unchanged, and Claude Code's own hooks can be sent
// to hookbus.
//
// Toward a hook (a hookbus agent running Claude Code hooks): NewInput
// builds the JSON a hook reads from a stage's event, and Decide reads what
// the hook answered (exit status, stdout, stderr) as an
// interceptors.Decision. Packages command and httphook are the
// interceptors that run command and http hooks with them.
//
//	in, err := claudecode.NewInput(claudecode.PreToolUse, ev, claudecode.Env{Cwd: root, TranscriptPath: path})
//	// ... run the hook with in as its stdin ...
//	dec, err := claudecode.Decide(claudecode.PreToolUse, ev, claudecode.Reply{ExitCode: 2, Stderr: []byte("no rm -rf")})
//	// dec: deny, reason "no rm -rf"
//
// From Claude Code (package bridge: loop claude-hook, loop gateway): ParseInput
// reads Claude Code's hook input, Input.ToHookbus gives the stage event it
// is recorded as, and Answer turns the chain's outcome into the Output
// Claude Code reads.
//
//	in, err := claudecode.ParseInput(stdin)
//	m, err := in.ToHookbus()                 // m.Stage, m.Subject, m.Payload
//	out, err := chain.Run(ctx, ev)           // ev built from m
//	o, err := claudecode.Answer(in, out, claudecode.AnswerOptions{})
//	os.Stdout.Write(o.JSON())
//
// Settings: LoadSettings reads the hooks section of a Claude Code
// settings.json, and Register registers its handlers on a Chain in the
// file's order, with a Factory per handler type:
//
//	s, err := claudecode.LoadSettings(".claude/settings.json")
//	hooks, err := claudecode.Register(chain, []*claudecode.Settings{s}, claudecode.Options{
//		Factories: map[string]claudecode.Factory{"command": command.Factory(cfg), "http": httphook.Factory(hcfg)},
//	})
//	engineConfig.Emitter = hooks.Emitter(emitter) // runs the hooks of observe-only events
//
// The event mapping, the input and output fields and the deliberate
// differences from Claude Code are in docs/PROTOCOL.md, "Claude Code
// hooks". TranscriptDir writes the JSONL transcripts hooks find at
// transcript_path, from the sessions' conversations it is given
// (loop.Conversations over the bus).
package claudecode
