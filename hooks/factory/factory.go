package factory

import (
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/harness"
)

// Names of Factory Droid as a harness.
const (
	// HarnessName is its name on the command line (loop agent-hook
	// --harness factory) and in harness.event records.
	HarnessName = "factory"
	// DefaultAgent is the agent id its sessions are recorded under by
	// default.
	DefaultAgent = "factory-droid"
)

// DefaultHookLimit is Droid's default timeout for a command hook.
const DefaultHookLimit = 60 * time.Second

// table is Droid's hook events and the stage each is recorded as ("": a
// harness.event), in the order a session meets them.
var table = harness.Table{
	{Name: "SessionStart", Stage: events.StageRunStarted},
	{Name: "UserPromptSubmit", Stage: events.StageIntake},
	{Name: "PreToolUse", Stage: events.StageToolBefore},
	{Name: "PostToolUse", Stage: events.StageToolAfter},
	{Name: "Notification"},
	{Name: "SubagentStop", Stage: events.StageSubagentAfter},
	{Name: "PreCompact", Stage: events.StageCompactBefore},
	{Name: "Stop", Stage: events.StageStop},
	{Name: "SessionEnd", Stage: events.StageRunCompleted},
}

// Events returns Droid's hook events, in the order a session meets them.
func Events() []string { return table.Names() }

// Harness returns Factory Droid as a harness.Protocol.
func Harness() claudecode.Variant {
	return claudecode.Variant{
		HarnessName: HarnessName, DefaultAgent: DefaultAgent, Product: "Factory Droid",
		Tools: events.HarnessFactory, Table: table, DefaultLimit: DefaultHookLimit,
	}
}
