package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
)

// Mapped is a Claude Code hook input as a hookbus stage event's parts: the
// bridge (Claude Code sending its hooks to hookbus) builds the event from
// them with its own ids.
type Mapped = harness.Mapped

// ParseInput reads a Claude Code hook input. The error wraps harness.ErrBadInput
// and says what is wrong.
func ParseInput(b []byte) (*Input, error) {
	var in Input
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("%w: %v (body %.80q)", harness.ErrBadInput, err, b)
	}
	if in.HookEventName == "" {
		return nil, fmt.Errorf("%w: no hook_event_name", harness.ErrBadInput)
	}
	in.raw = bytes.TrimSpace(b)
	return &in, nil
}

// ToHookbus maps a Claude Code hook input to the hookbus event it is
// recorded as (docs/PROTOCOL.md, "Claude Code hooks", the bridge
// direction). The error wraps ErrUnmapped for an event no stage stands for
// (Notification, ConfigChange, ...: recorded as a harness.event) and
// harness.ErrBadInput for an
// input that lacks what its event needs (a tool event without tool_name, a
// tool_input that is not an object).
func (in *Input) ToHookbus() (*Mapped, error) {
	st := in.HookEventName.Stage()
	if st == "" {
		return nil, fmt.Errorf("%w: Claude Code's %s is recorded as no hookbus stage", ErrUnmapped, in.HookEventName)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", harness.ErrBadInput, in.HookEventName, fmt.Sprintf(format, args...))
	}
	m := &Mapped{Stage: st}
	var call events.ToolCall
	if in.HookEventName.row().matcher == matchTool {
		if in.ToolName == "" {
			return nil, bad("no tool_name")
		}
		if len(in.ToolInput) > 0 && firstByte(in.ToolInput) != '{' {
			return nil, bad("tool_input is not a JSON object")
		}
		call = events.ToolCall{ID: in.ToolUseID, Name: in.ToolName, Arguments: arguments(in.ToolInput)}.WithAction(events.HarnessClaude)
		m.Subject = in.ToolName
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	switch in.HookEventName {
	case UserPromptSubmit:
		m.Payload = events.Intake{Prompt: str(in.Prompt)}
	case SessionStart:
		m.Payload = events.RunStarted{Resumed: in.Source == SourceResume}
	case PreToolUse:
		m.Payload = events.ToolBefore{Call: call}
	case PostToolUse:
		m.Payload = events.ToolAfter{Call: call, Result: events.ToolResult{
			CallID: call.ID, Name: call.Name, Content: ResultContent(in.ToolResponse),
		}}
	case PostToolUseFailure:
		m.Payload = events.ToolFailed{Call: call, Error: in.Error}
	case PermissionRequest:
		m.Payload = events.ApprovalRequested{Call: call, Reason: "Claude Code asks for permission", Suggestions: in.PermissionSuggestions}
	case SubagentStart:
		m.Subject = subagentType(in)
		m.Payload = events.SubagentBefore{AgentID: m.Subject, RunID: validOr(in.AgentID), Description: "Claude Code sub-agent " + in.AgentType}
	case SubagentStop:
		m.Subject = subagentType(in)
		m.Payload = events.SubagentAfter{AgentID: m.Subject, RunID: validOr(in.AgentID), Answer: str(in.LastAssistantMessage), Success: true}
	case PreCompact:
		m.Payload = events.CompactBefore{Manual: in.Trigger == TriggerManual}
	case PostCompact:
		m.Payload = events.CompactAfter{Summary: str(in.CompactSummary)}
	case Stop:
		p := events.Stop{Reason: events.ReasonDone, Answer: str(in.LastAssistantMessage)}
		if in.StopHookActive != nil && *in.StopHookActive {
			p.Continues = 1
		}
		m.Payload = p
	case SessionEnd:
		m.Payload = events.RunCompleted{Reason: events.ReasonDone, Detail: "Claude Code session ended: " + in.Reason}
	case StopFailure:
		msg := in.Error
		for _, s := range []string{in.ErrorDetails, str(in.LastAssistantMessage)} {
			if s != "" {
				msg += ": " + s
			}
		}
		m.Payload = events.RunFailed{Error: "Claude Code's turn ended on an API error: " + msg}
	}
	return m, nil
}

// subagentType is the sub-agent's agent id on the bus: its type when that
// is a valid id, else "subagent" (the type is kept in the description).
func subagentType(in *Input) string {
	if in.AgentType != "" && events.ValidateID("agent", in.AgentType) == nil {
		return in.AgentType
	}
	return "subagent"
}

// validOr returns id when it is a valid hookbus id, else "".
func validOr(id string) string {
	if id != "" && events.ValidateID("run", id) == nil {
		return id
	}
	return ""
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}
