package claudecode

import (
	"time"

	"github.com/hookbus/hookbus/events"
)

// HookEvent is a Claude Code hook event name: the hook_event_name of the
// input and a key of a settings file's hooks section.
type HookEvent string

// Claude Code's hook events (docs/PROTOCOL.md, "Claude Code hooks").
const (
	SessionStart         HookEvent = "SessionStart"
	Setup                HookEvent = "Setup"
	InstructionsLoaded   HookEvent = "InstructionsLoaded"
	UserPromptSubmit     HookEvent = "UserPromptSubmit"
	UserPromptExpansion  HookEvent = "UserPromptExpansion"
	PreToolUse           HookEvent = "PreToolUse"
	PermissionRequest    HookEvent = "PermissionRequest"
	PermissionDenied     HookEvent = "PermissionDenied"
	PostToolUse          HookEvent = "PostToolUse"
	PostToolUseFailure   HookEvent = "PostToolUseFailure"
	PostToolBatch        HookEvent = "PostToolBatch"
	PreSkillShellCommand HookEvent = "PreSkillShellCommand"
	Notification         HookEvent = "Notification"
	MessageDisplay       HookEvent = "MessageDisplay"
	SubagentStart        HookEvent = "SubagentStart"
	SubagentStop         HookEvent = "SubagentStop"
	TaskCreated          HookEvent = "TaskCreated"
	TaskCompleted        HookEvent = "TaskCompleted"
	TeammateIdle         HookEvent = "TeammateIdle"
	Elicitation          HookEvent = "Elicitation"
	ElicitationResult    HookEvent = "ElicitationResult"
	PreCompact           HookEvent = "PreCompact"
	PostCompact          HookEvent = "PostCompact"
	ConfigChange         HookEvent = "ConfigChange"
	CwdChanged           HookEvent = "CwdChanged"
	DirectoryAdded       HookEvent = "DirectoryAdded"
	FileChanged          HookEvent = "FileChanged"
	WorktreeCreate       HookEvent = "WorktreeCreate"
	WorktreeRemove       HookEvent = "WorktreeRemove"
	PreModelSwitch       HookEvent = "PreModelSwitch"
	PostModelSwitch      HookEvent = "PostModelSwitch"
	Stop                 HookEvent = "Stop"
	StopFailure          HookEvent = "StopFailure"
	SessionEnd           HookEvent = "SessionEnd"
)

// mapping is one row of the event table: a Claude Code event, the hookbus
// stage it is recorded as, and the stages whose events fire its hooks on
// a hookbus agent.
type mapping struct {
	event HookEvent
	// stage is the stage a Claude Code event is recorded as (the bridge
	// direction); "" for an event recorded as a harness.event.
	stage events.Stage
	// from are the stages whose events fire the Claude Code event's hooks
	// on a hookbus agent; none for an event whose hooks never fire there.
	from []events.Stage
	// matcher says what the event's matcher is matched against.
	matcher matchOn
	// limit is Claude Code's default timeout of the event's command, http
	// and mcp_tool hooks when it is not the 600 s of most events (SessionEnd's
	// is the budget all of them share).
	limit time.Duration
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
	matchOther                    // another field (events whose hooks never fire on a hookbus agent)
)

// table is the one list of Claude Code's hook events, in the order a
// session meets them; everything else about the mapping is read from it.
// It is never written.
var table = [...]mapping{
	{SessionStart, events.StageRunStarted, []events.Stage{events.StageRunStarted, events.StageIntake}, matchSource, 0},
	{Setup, "", nil, matchOther, 0},
	{InstructionsLoaded, "", nil, matchOther, 0},
	{UserPromptSubmit, events.StageIntake, []events.Stage{events.StageIntake}, matchNothing, 30 * time.Second},
	{UserPromptExpansion, "", nil, matchOther, 0},
	{PreToolUse, events.StageToolBefore, []events.Stage{events.StageToolBefore}, matchTool, 0},
	{PermissionRequest, events.StageApprovalRequested, []events.Stage{events.StageApprovalRequested}, matchTool, 0},
	{PermissionDenied, "", nil, matchOther, 0},
	{PostToolUse, events.StageToolAfter, []events.Stage{events.StageToolAfter}, matchTool, 0},
	{PostToolUseFailure, events.StageToolFailed, []events.Stage{events.StageToolFailed}, matchTool, 0},
	{PostToolBatch, "", nil, matchOther, 0},
	{PreSkillShellCommand, "", nil, matchOther, 0},
	{Notification, "", []events.Stage{events.StageApprovalRequested}, matchNotice, 0},
	{MessageDisplay, "", nil, matchOther, 10 * time.Second},
	{SubagentStart, events.StageSubagentBefore, []events.Stage{events.StageSubagentBefore}, matchAgentType, 0},
	{SubagentStop, events.StageSubagentAfter, []events.Stage{events.StageSubagentAfter, events.StageSubagentFailed}, matchAgentType, 0},
	{TaskCreated, "", nil, matchOther, 0},
	{TaskCompleted, "", nil, matchOther, 0},
	{TeammateIdle, "", nil, matchOther, 0},
	{Elicitation, "", nil, matchOther, 0},
	{ElicitationResult, "", nil, matchOther, 0},
	{PreCompact, events.StageCompactBefore, []events.Stage{events.StageCompactBefore}, matchTrigger, 0},
	{PostCompact, events.StageCompactAfter, []events.Stage{events.StageCompactAfter}, matchTrigger, 0},
	{ConfigChange, "", nil, matchOther, 0},
	{CwdChanged, "", nil, matchOther, 0},
	{DirectoryAdded, "", nil, matchOther, 0},
	{FileChanged, "", nil, matchOther, 0},
	{WorktreeCreate, "", nil, matchOther, 0},
	{WorktreeRemove, "", nil, matchOther, 0},
	{PreModelSwitch, "", nil, matchOther, 30 * time.Second},
	{PostModelSwitch, "", nil, matchOther, 30 * time.Second},
	{Stop, events.StageStop, []events.Stage{events.StageStop}, matchNothing, 0},
	{StopFailure, events.StageRunFailed, nil, matchOther, 0},
	{SessionEnd, events.StageRunCompleted, events.TerminalStages(), matchReason, SessionEndBudget},
}

// Claude Code's default timeouts (docs/PROTOCOL.md, "Claude Code hooks").
const (
	// DefaultHookLimit is the default timeout of command, http and
	// mcp_tool hooks of most events.
	DefaultHookLimit = 600 * time.Second
	// SessionEndBudget is the time all SessionEnd hooks share, unless a
	// hook's own timeout (up to 60 s) or CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS
	// raises it.
	SessionEndBudget = 1500 * time.Millisecond
)

func (e HookEvent) row() *mapping {
	for i := range table {
		if table[i].event == e {
			return &table[i]
		}
	}
	return nil
}

// Events returns the Claude Code events whose hooks fire on a hookbus
// agent, in the order a session meets them.
func Events() []HookEvent {
	var out []HookEvent
	for i := range table {
		if table[i].from != nil {
			out = append(out, table[i].event)
		}
	}
	return out
}

// AllEvents returns every Claude Code hook event hookbus knows, in the
// order a session meets them: the bridge records each of them.
func AllEvents() []HookEvent {
	out := make([]HookEvent, len(table))
	for i := range table {
		out[i] = table[i].event
	}
	return out
}

// Mapped reports whether the event's hooks fire on a hookbus agent (a
// stage's events fire them).
func (e HookEvent) Mapped() bool {
	m := e.row()
	return m != nil && m.from != nil
}

// Known reports whether e is one of Claude Code's hook events.
func (e HookEvent) Known() bool { return e.row() != nil }

// Limit is Claude Code's default timeout of the event's command, http and
// mcp_tool hooks (SessionEnd's is the budget they share): 600 s for most
// events, 30 s for UserPromptSubmit, PreModelSwitch and PostModelSwitch,
// 10 s for MessageDisplay, 1.5 s for SessionEnd.
func (e HookEvent) Limit() time.Duration {
	if m := e.row(); m != nil && m.limit > 0 {
		return m.limit
	}
	return DefaultHookLimit
}

// Stage returns the stage a Claude Code event becomes on the bus (the
// bridge direction: Claude Code's event recorded as this stage's event);
// "" for an event recorded as a harness.event (Notification, ConfigChange,
// ...).
func (e HookEvent) Stage() events.Stage {
	if m := e.row(); m != nil {
		return m.stage
	}
	return ""
}

// Stages returns the hookbus stages whose events fire the event's hooks on
// a hookbus agent: SubagentStop fires on subagent.after and
// subagent.failed, SessionEnd on run.completed and run.failed,
// Notification on approval.requested, SessionStart on intake (a run's
// first attempt: before the UserPromptSubmit hooks, when the session
// begins) and run.started (an attempt without an intake: a resumed one, a
// compaction), the others on their Stage.
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

// EventsFor returns the Claude Code events whose hooks stage fires: the
// event recorded as the stage first, then the others in table order.
// approval.requested fires PermissionRequest and Notification; intake
// UserPromptSubmit and SessionStart (a run's first attempt).
func EventsFor(stage events.Stage) []HookEvent {
	var own, others []HookEvent
	for i := range table {
		for _, s := range table[i].from {
			if s != stage {
				continue
			}
			if table[i].stage == stage {
				own = append(own, table[i].event)
			} else {
				others = append(others, table[i].event)
			}
		}
	}
	return append(own, others...)
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
