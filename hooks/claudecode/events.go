package claudecode

import (
	"github.com/hookbus/hookbus/events"
)

// HookEvent is a Claude Code hook event name: the hook_event_name of the
// input and a key of a settings file's hooks section.
type HookEvent string

// The Claude Code events hookbus maps to stages (docs/PROTOCOL.md, "Claude
// Code hooks").
const (
	UserPromptSubmit   HookEvent = "UserPromptSubmit"
	PreToolUse         HookEvent = "PreToolUse"
	PostToolUse        HookEvent = "PostToolUse"
	PostToolUseFailure HookEvent = "PostToolUseFailure"
	PermissionRequest  HookEvent = "PermissionRequest"
	Notification       HookEvent = "Notification"
	Stop               HookEvent = "Stop"
	SubagentStart      HookEvent = "SubagentStart"
	SubagentStop       HookEvent = "SubagentStop"
	PreCompact         HookEvent = "PreCompact"
	PostCompact        HookEvent = "PostCompact"
	SessionStart       HookEvent = "SessionStart"
	SessionEnd         HookEvent = "SessionEnd"
)

// mapping is one row of the event table: a Claude Code event and the
// hookbus stages it stands for.
type mapping struct {
	event HookEvent
	// stage is the stage a Claude Code event becomes (the bridge
	// direction); "" when it becomes none.
	stage events.Stage
	// from are the stages whose events fire the Claude Code event's hooks
	// on a hookbus agent.
	from []events.Stage
	// matcher says what the event's matcher is matched against.
	matcher matchOn
}

// matchOn is what a matcher of an event matches.
type matchOn int

const (
	matchNothing   matchOn = iota // the event takes no matcher
	matchTool                     // the tool name
	matchAgentType                // the sub-agent's type (its agent id)
	matchSource                   // SessionStart's source
	matchReason                   // SessionEnd's reason
	matchTrigger                  // PreCompact's and PostCompact's trigger
	matchNotice                   // Notification's notification_type
)

// table is the one list of mapped events; everything else about the
// mapping is read from it. It is never written.
var table = [...]mapping{
	{UserPromptSubmit, events.StageIntake, []events.Stage{events.StageIntake}, matchNothing},
	{SessionStart, events.StageRunStarted, []events.Stage{events.StageRunStarted}, matchSource},
	{PreToolUse, events.StageToolBefore, []events.Stage{events.StageToolBefore}, matchTool},
	{PostToolUse, events.StageToolAfter, []events.Stage{events.StageToolAfter}, matchTool},
	{PostToolUseFailure, events.StageToolFailed, []events.Stage{events.StageToolFailed}, matchTool},
	{PermissionRequest, events.StageApprovalRequested, []events.Stage{events.StageApprovalRequested}, matchTool},
	{Notification, "", []events.Stage{events.StageApprovalRequested}, matchNotice},
	{SubagentStart, events.StageSubagentBefore, []events.Stage{events.StageSubagentBefore}, matchAgentType},
	{SubagentStop, events.StageSubagentAfter, []events.Stage{events.StageSubagentAfter, events.StageSubagentFailed}, matchAgentType},
	{PreCompact, events.StageCompactBefore, []events.Stage{events.StageCompactBefore}, matchTrigger},
	{PostCompact, events.StageCompactAfter, []events.Stage{events.StageCompactAfter}, matchTrigger},
	{Stop, events.StageStop, []events.Stage{events.StageStop}, matchNothing},
	{SessionEnd, events.StageRunCompleted, events.TerminalStages(), matchReason},
}

// otherEvents are Claude Code events hookbus has no stage for: a settings
// file naming them loads, and their hooks are listed in Settings.Skipped.
var otherEvents = [...]HookEvent{
	"PermissionDenied", "StopFailure", "Setup", "TeammateIdle", "TaskCreated", "TaskCompleted",
	"ConfigChange", "CwdChanged", "FileChanged", "InstructionsLoaded", "Elicitation",
	"ElicitationResult", "WorktreeCreate", "WorktreeRemove", "UserPromptExpansion",
}

func (e HookEvent) row() *mapping {
	for i := range table {
		if table[i].event == e {
			return &table[i]
		}
	}
	return nil
}

// Events returns the Claude Code events hookbus maps, in the order a run
// meets them.
func Events() []HookEvent {
	out := make([]HookEvent, len(table))
	for i := range table {
		out[i] = table[i].event
	}
	return out
}

// Mapped reports whether hookbus maps the event.
func (e HookEvent) Mapped() bool { return e.row() != nil }

// Stage returns the stage a Claude Code event becomes on the bus (the
// bridge direction: Claude Code's event recorded as this stage's event);
// "" for an event that becomes none (Notification, and unmapped events).
func (e HookEvent) Stage() events.Stage {
	if m := e.row(); m != nil {
		return m.stage
	}
	return ""
}

// Stages returns the hookbus stages whose events fire the event's hooks on
// a hookbus agent: SubagentStop fires on subagent.after and
// subagent.failed, SessionEnd on run.completed and run.failed,
// Notification on approval.requested, the others on their Stage.
func (e HookEvent) Stages() []events.Stage {
	if m := e.row(); m != nil {
		return append([]events.Stage(nil), m.from...)
	}
	return nil
}

// Intercepts reports whether the event's hooks may decide: whether its
// stage accepts interceptors (UserPromptSubmit, PreToolUse, PostToolUse,
// SubagentStart, Stop). The others' hooks observe: they run, and what they
// answer changes nothing.
func (e HookEvent) Intercepts() bool {
	m := e.row()
	return m != nil && len(m.from) == 1 && m.from[0].Interceptable()
}

// EventsFor returns the Claude Code events whose hooks stage fires, in
// table order: approval.requested fires PermissionRequest and
// Notification.
func EventsFor(stage events.Stage) []HookEvent {
	var out []HookEvent
	for i := range table {
		for _, s := range table[i].from {
			if s == stage {
				out = append(out, table[i].event)
			}
		}
	}
	return out
}

// takesMatcher reports whether the event's hooks are narrowed by a matcher.
func (e HookEvent) takesMatcher() bool {
	m := e.row()
	return m != nil && m.matcher != matchNothing
}

// toolMatched reports whether the event's matcher becomes a Tools matcher
// of its registration (the chain skips non-matching events itself).
func (e HookEvent) toolMatched() bool {
	m := e.row()
	return m != nil && (m.matcher == matchTool || m.matcher == matchAgentType)
}

// knownOther reports whether e is a Claude Code event hookbus does not map.
func knownOther(e HookEvent) bool {
	for _, o := range otherEvents {
		if o == e {
			return true
		}
	}
	return false
}
