package qwen

import (
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/harness"
)

// Names of Qwen Code as a harness.
const (
	// HarnessName is its name on the command line (loop agent-hook
	// --harness qwen) and in harness.event records.
	HarnessName = "qwen"
	// DefaultAgent is the agent id its sessions are recorded under by
	// default.
	DefaultAgent = "qwen-code"
)

// DefaultHookLimit is Qwen Code's default timeout for a hook.
const DefaultHookLimit = 60 * time.Second

// table is Qwen Code's hook events and the stage each is recorded as
// ("": a harness.event), in the order a session meets them.
var table = harness.Table{
	{Name: "SessionStart", Stage: events.StageRunStarted},
	{Name: "Notification"},
	{Name: "UserPromptSubmit", Stage: events.StageIntake},
	{Name: "PreToolUse", Stage: events.StageToolBefore},
	{Name: "PermissionRequest", Stage: events.StageApprovalRequested},
	{Name: "PostToolUse", Stage: events.StageToolAfter},
	{Name: "PostToolUseFailure", Stage: events.StageToolFailed},
	{Name: "PostToolBatch"},
	{Name: "SubagentStart", Stage: events.StageSubagentBefore},
	{Name: "SubagentStop", Stage: events.StageSubagentAfter},
	{Name: "PreCompact", Stage: events.StageCompactBefore},
	{Name: "PostCompact", Stage: events.StageCompactAfter},
	{Name: "Stop", Stage: events.StageStop},
	{Name: "StopFailure", Stage: events.StageRunFailed},
	{Name: "SessionEnd", Stage: events.StageRunCompleted},
}

// Events returns Qwen Code's hook events, in the order a session meets
// them.
func Events() []string { return table.Names() }

// Harness returns Qwen Code as a harness.Protocol.
func Harness() claudecode.Variant {
	return claudecode.Variant{
		HarnessName: HarnessName, DefaultAgent: DefaultAgent, Product: "Qwen Code",
		Tools: events.HarnessQwen, Table: table, DefaultLimit: DefaultHookLimit,
		Skip: EmptyPrompt,
		// Qwen Code runs the model's call whatever updatedInput says.
		DenyRewrite: true,
	}
}

// EmptyPrompt reports a UserPromptSubmit without a prompt: Qwen Code's
// tool-result turn, not a prompt of the user's.
func EmptyPrompt(in *claudecode.Input) (string, bool) {
	if in.HookEventName != claudecode.UserPromptSubmit || (in.Prompt != nil && strings.TrimSpace(*in.Prompt) != "") {
		return "", false
	}
	return "an empty prompt: Qwen Code's turn of tool results, not a new prompt", true
}
