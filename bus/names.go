package bus

import (
	"strings"

	"github.com/hookbus/hookbus/events"
)

// Names are the JetStream assets of one subject prefix. With the default
// prefix "hookbus" they are HOOKBUS_EVENTS, HOOKBUS_RUNS, HOOKBUS_WAKES,
// HOOKBUS_DLQ, HOOKBUS_CHECKPOINTS, HOOKBUS_USAGE, HOOKBUS_COUNTERS, hookbus_hooks, hookbus_trust, hookbus_decisions,
// hookbus_budgets, hookbus_agents, hookbus_workers and hookbus_payloads.
// Another prefix derives them the same way: dots become underscores, upper
// case for streams and lower case for buckets, so "acme.hookbus" gives
// ACME_HOOKBUS_EVENTS and acme_hookbus_hooks. Two prefixes that differ only
// in case or in '.' versus '_' therefore share their assets; pick prefixes
// that do not.
type Names struct {
	Events      string // stream of <prefix>.evt.> (limits retention)
	Runs        string // stream of <prefix>.run.> (work-queue retention)
	Wakes       string // stream of <prefix>.wake.> (message schedules)
	DeadLetters string // stream of <prefix>.dlq.>
	Checkpoints string // stream of <prefix>.checkpoint (signed checkpoints of Events)
	Hooks       string // KV bucket: the interceptor registry
	Trust       string // KV bucket: trust grants
	Decisions   string // KV bucket: the decision cache of prompt hooks
	Budgets     string // KV bucket: shared budgets' reservations and use
	Usage       string // stream of <prefix>.use.> (what the shared budgets counted: append only)
	Counters    string // stream of <prefix>.cnt.> (policies' fleet-wide counters: JetStream counters)
	Agents      string // KV bucket: the fleet's agent definitions (runs.Fleet)
	Workers     string // KV bucket: the live workers (runs.Fleet), entries expiring
	Leases      string // KV bucket: the leases of live plugins (remote.Lease), entries expiring
	Payloads    string // object store: large payloads (claim check)
}

// NamesFor returns the asset names of a subject prefix ("" means the
// default). The prefix is assumed valid (see WithPrefix).
func NamesFor(prefix string) Names {
	if prefix == "" {
		prefix = events.DefaultPrefix
	}
	flat := strings.ReplaceAll(prefix, ".", "_")
	up, low := strings.ToUpper(flat), strings.ToLower(flat)
	return Names{
		Events:      up + "_EVENTS",
		Runs:        up + "_RUNS",
		Wakes:       up + "_WAKES",
		DeadLetters: up + "_DLQ",
		Checkpoints: up + "_CHECKPOINTS",
		Hooks:       low + "_hooks",
		Trust:       low + "_trust",
		Decisions:   low + "_decisions",
		Budgets:     low + "_budgets",
		Usage:       up + "_USAGE",
		Counters:    up + "_COUNTERS",
		Agents:      low + "_agents",
		Workers:     low + "_workers",
		Leases:      low + "_leases",
		Payloads:    low + "_payloads",
	}
}

// UsageSubject is the subject of the records of what a shared budget
// counted (stream Names.Usage): <prefix>.use.<agent>, or
// <prefix>.use.<agent>.<session> for one session's budget ("" for the
// agent's).
func UsageSubject(s events.Subjects, agent, session string) string {
	subj := strings.TrimSuffix(s.AllEvents(), ".evt.>") + ".use." + agent
	if session != "" {
		subj += "." + session
	}
	return subj
}

// CountersSubject is the root of the subjects of policies' fleet-wide
// counters (stream Names.Counters): <prefix>.cnt. What follows it is
// bus/history's (docs/PROTOCOL.md, "Policy counters").
func CountersSubject(s events.Subjects) string {
	return strings.TrimSuffix(s.AllEvents(), ".evt.>") + ".cnt"
}
