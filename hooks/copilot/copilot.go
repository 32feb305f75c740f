package copilot

import (
	"bytes"
	"cmp"
	"encoding/json"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/harness"
)

// Names of Copilot CLI as a harness.
const (
	// HarnessName is its name on the command line (loop agent-hook
	// --harness copilot) and in harness.event records.
	HarnessName = "copilot"
	// DefaultAgent is the agent id its sessions are recorded under by
	// default.
	DefaultAgent = "copilot-cli"
)

// DefaultHookLimit is Copilot CLI's default timeout for a command hook
// (timeoutSec).
const DefaultHookLimit = 30 * time.Second

// table is Copilot CLI's PascalCase hook events (the ones that send Claude
// Code's input) and the stage each is recorded as, in the order a session
// meets them. PermissionRequest sends Copilot CLI's own input: a
// harness.event.
var table = harness.Table{
	{Name: "SessionStart", Stage: events.StageRunStarted},
	{Name: "UserPromptSubmit", Stage: events.StageIntake},
	{Name: "PreToolUse", Stage: events.StageToolBefore},
	{Name: "PermissionRequest"},
	{Name: "PostToolUse", Stage: events.StageToolAfter},
	{Name: "SubagentStop", Stage: events.StageSubagentAfter},
	{Name: "Stop", Stage: events.StageStop},
	{Name: "SessionEnd", Stage: events.StageRunCompleted},
}

// Events returns the hook events the settings should send to the hook, in
// the order a session meets them.
func Events() []string { return table.Names() }

// StageOf returns the stage Copilot CLI's event is recorded as; "" for a
// harness.event.
func StageOf(event string) events.Stage { return table.StageOf(event) }

// Harness returns Copilot CLI as a harness.Protocol.
func Harness() claudecode.Variant {
	return claudecode.Variant{
		HarnessName: HarnessName, DefaultAgent: DefaultAgent, Product: "GitHub Copilot CLI",
		Tools: events.HarnessCopilot, Table: table, DefaultLimit: DefaultHookLimit,
		Fix:    toolResult,
		Native: native,
		// A rewritten call runs only when the answer allows it.
		Options: claudecode.AnswerOptions{ApproveModified: true},
	}
}

// native reads an input in Copilot CLI's own schema: its session
// (sessionId) and its event, named by hookName where it has one, else
// known by the fields it carries (its camelCase events name none).
func native(raw []byte) (event, session string, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "", "", false
	}
	_ = json.Unmarshal(m["sessionId"], &session)
	_ = json.Unmarshal(m["hookName"], &event)
	if session == "" {
		return "", "", false
	}
	for _, f := range []struct{ field, event string }{
		{"toolResult", "postToolUse"}, {"toolArgs", "preToolUse"}, {"stopReason", "agentStop"},
		{"prompt", "userPromptSubmitted"}, {"initialPrompt", "sessionStart"}, {"source", "sessionStart"},
		{"error", "errorOccurred"}, {"reason", "sessionEnd"},
	} {
		if event != "" {
			break
		}
		if _, ok := m[f.field]; ok {
			event = f.event
		}
	}
	event = cmp.Or(event, "unnamed")
	return event, session, true
}

// toolResult reads PostToolUse's tool_result ({"result_type",
// "text_result_for_llm"}), Copilot CLI's name for tool_response, as the
// text the model is given.
func toolResult(in *claudecode.Input, raw []byte) {
	if len(bytes.TrimSpace(in.ToolResponse)) > 0 {
		return
	}
	var r struct {
		ToolResult *struct {
			ResultType string `json:"result_type"`
			Text       string `json:"text_result_for_llm"`
		} `json:"tool_result"`
	}
	if json.Unmarshal(raw, &r) != nil || r.ToolResult == nil {
		return
	}
	in.ToolResponse, _ = json.Marshal(r.ToolResult.Text)
	if r.ToolResult.ResultType != "" && r.ToolResult.ResultType != "success" && in.Error == "" {
		in.Error = r.ToolResult.ResultType
	}
}
