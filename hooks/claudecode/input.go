package claudecode

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Input is Claude Code's hook input: the JSON a command hook reads on stdin
// and an http hook receives as its body. Which fields an event carries is
// in docs/PROTOCOL.md, "Claude Code hooks"; fields an event does not carry
// are left out.
type Input struct {
	SessionID      string    `json:"session_id"`
	TranscriptPath string    `json:"transcript_path"`
	Cwd            string    `json:"cwd"`
	PermissionMode string    `json:"permission_mode,omitempty"`
	HookEventName  HookEvent `json:"hook_event_name"`

	// AgentID and AgentType name the sub-agent a tool event happens in
	// (and the sub-agent of SubagentStart and SubagentStop).
	AgentID   string `json:"agent_id,omitempty"`
	AgentType string `json:"agent_type,omitempty"`

	// Tool events (PreToolUse, PostToolUse, PostToolUseFailure,
	// PermissionRequest).
	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	Error        string          `json:"error,omitempty"`
	IsInterrupt  *bool           `json:"is_interrupt,omitempty"`

	// UserPromptSubmit.
	Prompt *string `json:"prompt,omitempty"`

	// Stop and SubagentStop.
	StopHookActive       *bool   `json:"stop_hook_active,omitempty"`
	LastAssistantMessage *string `json:"last_assistant_message,omitempty"`
	AgentTranscriptPath  string  `json:"agent_transcript_path,omitempty"`

	// PreCompact and PostCompact.
	Trigger            string  `json:"trigger,omitempty"`
	CustomInstructions *string `json:"custom_instructions,omitempty"`
	CompactSummary     *string `json:"compact_summary,omitempty"`

	// SessionStart and SessionEnd.
	Source string `json:"source,omitempty"`
	Model  string `json:"model,omitempty"`
	Reason string `json:"reason,omitempty"`

	// Notification.
	Message          string `json:"message,omitempty"`
	Title            string `json:"title,omitempty"`
	NotificationType string `json:"notification_type,omitempty"`

	// PermissionRequest: the permission updates Claude Code suggests.
	PermissionSuggestions json.RawMessage `json:"permission_suggestions,omitempty"`

	// StopFailure: the error's details (Error is its type).
	ErrorDetails string `json:"error_details,omitempty"`

	// Codex CLI's additions: the turn the event belongs to.
	TurnID string `json:"turn_id,omitempty"`

	// raw is the input as read by ParseInput.
	raw []byte
}

// Raw returns the input as ParseInput read it (nil for an Input built
// otherwise).
func (in *Input) Raw() []byte { return in.raw }

// Event is hook_event_name.
func (in *Input) Event() string { return string(in.HookEventName) }

// Session is session_id.
func (in *Input) Session() string { return in.SessionID }

// Env is what an input says about where the hook runs, beyond the event.
type Env struct {
	// Cwd is the agent's root: the hook's working directory.
	Cwd string
	// TranscriptPath is the session's transcript (Transcripts).
	TranscriptPath string
	// AgentTranscriptPath is the sub-agent's transcript, for SubagentStop.
	AgentTranscriptPath string
	// PermissionMode defaults to "default".
	PermissionMode string
	// Model is the agent's model, for SessionStart.
	Model string
}

// Values of the input fields hookbus sets.
const (
	// SourceStartup is SessionStart's source on a session's first run;
	// SourceResume on its later runs (and on a resumed attempt).
	SourceStartup = "startup"
	SourceResume  = "resume"
	// EndReasonOther is SessionEnd's reason: a hookbus run ended.
	EndReasonOther = "other"
	// TriggerManual and TriggerAuto are the compaction triggers.
	TriggerManual = "manual"
	TriggerAuto   = "auto"
	// NoticePermission is the notification_type of a call waiting for
	// approval.
	NoticePermission = "permission_prompt"
	// DefaultPermissionMode is the permission_mode hookbus reports.
	DefaultPermissionMode = "default"
)

// NewInput builds the input of a Claude Code event's hooks from a hookbus
// event of one of the event's Stages. The error wraps ErrUnmapped when the
// event's stage does not fire it, and events.ErrPayload when the event's
// data does not decode.
func NewInput(event HookEvent, ev *events.Event, env Env) (*Input, error) {
	if ev == nil {
		return nil, fmt.Errorf("%w: nil event", events.ErrMalformedEvent)
	}
	if !firesOn(event, ev.Stage) {
		return nil, fmt.Errorf("%w: %s does not fire %s hooks (it fires %v)", ErrUnmapped, ev.Stage, event, EventsFor(ev.Stage))
	}
	in := &Input{
		SessionID: ev.SessionID, TranscriptPath: env.TranscriptPath, Cwd: env.Cwd,
		PermissionMode: env.PermissionMode, HookEventName: event,
	}
	in.PermissionMode = cmp.Or(in.PermissionMode, DefaultPermissionMode)
	if ev.ParentRunID != "" { // a sub-agent's run: its tool events say so
		in.AgentID, in.AgentType = ev.RunID, ev.AgentID
	}
	if err := in.fill(event, ev, env); err != nil {
		return nil, err
	}
	return in, nil
}

// fill sets what the input of event's hooks says of ev, by its stage.
func (in *Input) fill(event HookEvent, ev *events.Event, env Env) error {
	switch ev.Stage {
	case events.StageIntake:
		p, err := data[events.Intake](ev)
		if err != nil {
			return err
		}
		if event == SessionStart {
			in.Source, in.Model = SourceStartup, env.Model
			if p.HistoryMessages > 0 {
				in.Source = SourceResume
			}
			break
		}
		in.Prompt = &p.Prompt
	case events.StageRunStarted:
		p, err := data[events.RunStarted](ev)
		if err != nil {
			return err
		}
		in.Source, in.Model = SourceStartup, env.Model
		if p.HistoryMessages > 0 || p.Resumed {
			in.Source = SourceResume
		}
	case events.StageToolBefore, events.StageToolAfter, events.StageToolFailed, events.StageApprovalRequested:
		return in.fillCall(event, ev)
	case events.StageSubagentBefore:
		p, err := data[events.SubagentBefore](ev)
		if err != nil {
			return err
		}
		in.AgentID, in.AgentType = p.RunID, p.AgentID
	case events.StageSubagentAfter:
		p, err := data[events.SubagentAfter](ev)
		if err != nil {
			return err
		}
		in.AgentID, in.AgentType = p.RunID, p.AgentID
		in.StopHookActive, in.LastAssistantMessage = new(bool), &p.Answer
		in.AgentTranscriptPath = env.AgentTranscriptPath
	case events.StageSubagentFailed:
		p, err := data[events.SubagentFailed](ev)
		if err != nil {
			return err
		}
		empty := ""
		in.AgentID, in.AgentType = p.RunID, p.AgentID
		in.StopHookActive, in.LastAssistantMessage = new(bool), &empty
		in.AgentTranscriptPath = env.AgentTranscriptPath
	case events.StageCompactBefore:
		p, err := data[events.CompactBefore](ev)
		if err != nil {
			return err
		}
		empty := ""
		in.Trigger, in.CustomInstructions = trigger(p.Manual), &empty
	case events.StageCompactAfter:
		p, err := data[events.CompactAfter](ev)
		if err != nil {
			return err
		}
		// compact.after does not say what asked for the compaction: a
		// manual one is its own run (loop compact), which has no prompt.
		in.Trigger, in.CompactSummary = TriggerAuto, &p.Summary
	case events.StageStop:
		p, err := data[events.Stop](ev)
		if err != nil {
			return err
		}
		active := p.Continues > 0
		in.StopHookActive, in.LastAssistantMessage = &active, &p.Answer
	case events.StageRunCompleted, events.StageRunFailed:
		in.Reason = EndReasonOther
	}
	return nil
}

// fillCall sets what the input says of a tool call's event: the call, its
// result or failure, or its wait for approval.
func (in *Input) fillCall(event HookEvent, ev *events.Event) error {
	switch ev.Stage {
	case events.StageToolBefore:
		p, err := data[events.ToolBefore](ev)
		if err != nil {
			return err
		}
		in.setCall(p.Call)
	case events.StageToolAfter:
		p, err := data[events.ToolAfter](ev)
		if err != nil {
			return err
		}
		in.setCall(p.Call)
		in.ToolResponse = ToolResponse(p.Call, p.Result)
	case events.StageToolFailed:
		p, err := data[events.ToolFailed](ev)
		if err != nil {
			return err
		}
		in.setCall(p.Call)
		in.Error, in.IsInterrupt = p.Error, new(bool)
	case events.StageApprovalRequested:
		p, err := data[events.ApprovalRequested](ev)
		if err != nil {
			return err
		}
		if event == Notification {
			in.NotificationType, in.Title = NoticePermission, "Permission needed"
			in.Message = fmt.Sprintf("%s needs your permission to use %s", ev.AgentID, p.Call.Name)
			if p.Reason != "" {
				in.Message += ": " + p.Reason
			}
			break
		}
		in.ToolName, in.ToolInput = p.Call.Name, arguments(p.Call.Arguments)
	}
	return nil
}

// data decodes ev's payload as T, with an error wrapping events.ErrPayload
// that names the event when it does not decode.
func data[T any](ev *events.Event) (T, error) {
	p, err := events.Data[T](ev)
	if err != nil {
		return p, fmt.Errorf("%w: %s event %s: %v", events.ErrPayload, ev.Stage, ev.ID, err)
	}
	return p, nil
}

func (in *Input) setCall(c events.ToolCall) {
	in.ToolName, in.ToolInput, in.ToolUseID = c.Name, arguments(c.Arguments), c.ID
}

// arguments is a call's arguments as tool_input: always a JSON object.
func arguments(a json.RawMessage) json.RawMessage {
	if len(a) == 0 || string(a) == "null" {
		return json.RawMessage(`{}`)
	}
	return a
}

func trigger(manual bool) string {
	if manual {
		return TriggerManual
	}
	return TriggerAuto
}

// firesOn reports whether stage's events fire event's hooks.
func firesOn(event HookEvent, stage events.Stage) bool {
	return slices.Contains(event.Stages(), stage)
}

// Applies reports whether Claude Code would run event's hooks for ev at
// all: not PostToolUse's for a result that is an error (a failed tool,
// which fires PostToolUseFailure, or a denied call, which fires neither),
// though hookbus gives every call's result to tool.after. The command and
// http hooks answer NotRun without running when it is false.
func Applies(event HookEvent, ev *events.Event) bool {
	if event != PostToolUse || ev.Stage != events.StageToolAfter {
		return true
	}
	var p struct {
		Result struct {
			IsError bool `json:"is_error"`
		} `json:"result"`
	}
	return ev.DecodeData(&p) != nil || !p.Result.IsError
}

// NotRun is the decision of a hook that did not run because it does not
// apply (Applies is false): allow, annotated so that the audit does not
// read it as the hook's own.
func NotRun(event HookEvent) *interceptors.Decision {
	return &interceptors.Decision{Kind: interceptors.Allow, Annotations: map[string]string{
		"not_run": string(event) + " hooks do not run for a call whose result is an error (Claude Code fires PostToolUseFailure, or nothing for a denied call)",
	}}
}

// MatchTarget is what a matcher of the input's event is matched against:
// the tool name, the sub-agent's type, SessionStart's source, SessionEnd's
// reason, the compaction trigger or the notification type; "" for events
// that take no matcher.
func (in *Input) MatchTarget() string {
	m := in.HookEventName.row()
	if m == nil {
		return ""
	}
	switch m.matcher {
	case matchTool:
		return in.ToolName
	case matchAgentType:
		return in.AgentType
	case matchSource:
		return in.Source
	case matchReason:
		return in.Reason
	case matchTrigger:
		return in.Trigger
	case matchNotice:
		return in.NotificationType
	}
	return ""
}

// SubagentSession returns the sub-agent run a subagent.after or
// subagent.failed event ended (its agent and session), for its
// agent_transcript_path; ok is false for other events.
func SubagentSession(ev *events.Event) (agent, session string, ok bool) {
	switch ev.Stage {
	case events.StageSubagentAfter:
		if p, err := events.Data[events.SubagentAfter](ev); err == nil && p.SessionID != "" {
			return p.AgentID, p.SessionID, true
		}
	}
	return "", "", false
}
