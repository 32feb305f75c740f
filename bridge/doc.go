// Package bridge is the coding-agent bridge: it brings a coding agent that
// runs its own loop onto hookbus. Each of the agent's own hook events is
// recorded on the bus and answered with what the bus' interceptors decide,
// so that the hooks, the record and the audit of hookbus' own agents serve
// it too. Claude Code is the agent it speaks to today: this
// is the logic of "loop claude-hook" (a Claude Code command hook, one
// process per event) and "loop gateway" (a Claude Code http hook server).
// Claude Code's hook protocol itself (its input, its output, the mapping
// to stages) is package hooks/claudecode.
//
// A Bridge reads one Claude Code hook input, maps it to its stage event
// (package claudecode: Input.ToHookbus), runs the interceptors that match
// it in order exactly as the hookbus loop does, appends the hook.decided
// and hook.failed records and the event (as the interceptors left it) to
// the Claude Code session's stream, and words the outcome as Claude Code's
// output (claudecode.Answer).
//
//	br, err := bridge.New(bridge.Config{Store: b, Hooks: chain}) // b a *bus.Bus, chain synced from the registry
//	out, err := br.Handle(ctx, in)                              // in from claudecode.ParseInput
//	os.Stdout.Write(out.JSON())
//
// Every hook invocation may be a new process, and Claude Code runs hooks
// in parallel, so a Bridge keeps no state: it derives the run and the next
// seq from the session's events each time, and appends with
// bus.AppendAfter, fenced on the session's last event as read, reading
// again when another writer got there first. A long-lived process (loop
// gateway) gives its bridges a Cache (Config.Cache): a session's next
// event then starts from where the process's own last append left the
// session, with no read, and the same fence tells it when anybody else
// wrote in between. Handle answers before its
// context's deadline whatever happens: when NATS is away or slow, by the
// outage policy (harness.Input.Outage). docs/PROTOCOL.md, "The bridge", has the rules.
package bridge
