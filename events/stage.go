package events

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Stage names one hook point of the agent loop. Its string form is the
// CloudEvent type suffix and the last subject token(s): "tool.before" is
// published as type "hookbus.tool.before".
type Stage string

// The stages, in the order a run meets them.
const (
	StageIntake            Stage = "intake"
	StageRunStarted        Stage = "run.started"
	StageStepStarted       Stage = "step.started"
	StageContextAssembled  Stage = "context.assembled"
	StageModelResponded    Stage = "model.responded"
	StageModelFailed       Stage = "model.failed"
	StageToolBefore        Stage = "tool.before"
	StageToolResult        Stage = "tool.result"
	StageToolAfter         Stage = "tool.after"
	StageToolFailed        Stage = "tool.failed"
	StageApprovalRequested Stage = "approval.requested"
	StageApprovalResolved  Stage = "approval.resolved"
	StageCompactBefore     Stage = "compact.before"
	StageCompactAfter      Stage = "compact.after"
	StageCompactFailed     Stage = "compact.failed"
	StageSubagentBefore    Stage = "subagent.before"
	StageSubagentAfter     Stage = "subagent.after"
	StageSubagentFailed    Stage = "subagent.failed"
	StageStepCompleted     Stage = "step.completed"
	StageStop              Stage = "stop"
	StageRunCompleted      Stage = "run.completed"
	StageRunFailed         Stage = "run.failed"
	StageHarnessEvent      Stage = "harness.event"
	StageHookDecided       Stage = "hook.decided"
	StageHookFailed        Stage = "hook.failed"
)

// TypePrefix prefixes every hookbus CloudEvent type.
const TypePrefix = "hookbus."

// Group is the part of a run a stage records: the run itself, a step, a
// model call, a tool call, an approval, a compaction, a sub-agent call, or
// an interceptor's call (the record of a decision or failure on another
// event). Readers that draw or fold a run take a stage's group from the
// stage table (Stage.Group) rather than list the stages again.
type Group string

// The groups, in the order a run meets them.
const (
	GroupRun        Group = "run"        // intake, run.started, stop, run.completed, run.failed
	GroupStep       Group = "step"       // step.started, step.completed
	GroupModel      Group = "model"      // context.assembled, model.responded, model.failed
	GroupTool       Group = "tool"       // tool.before, tool.result, tool.after, tool.failed
	GroupApproval   Group = "approval"   // approval.requested, approval.resolved
	GroupCompaction Group = "compaction" // compact.before, compact.after, compact.failed
	GroupSubagent   Group = "subagent"   // subagent.before, subagent.after, subagent.failed
	GroupHarness    Group = "harness"    // harness.event
	GroupHook       Group = "hook"       // hook.decided, hook.failed
)

// trait is what else the stage table says of a stage.
type trait uint8

const (
	// privileged stages accept only trusted interceptors (built-in, or
	// plugins granted privileged_hooks).
	privileged trait = 1 << iota
	// failure stages record that something failed.
	failure
	// terminal stages end a run: its last event.
	terminal
)

// stageSpec is one row of stageTable.
type stageSpec struct {
	stage Stage
	group Group
	// accepts is what interceptors may decide on the stage; none means
	// observe-only (no intercepting hook may register).
	accepts Decisions
	traits  trait
	// payload returns a pointer to a new zero value of the stage's data.
	payload func() any
}

// stageTable is the one list of stages, in the order a run meets them
// (docs/PROTOCOL.md, "Stages"). Everything else about stages (Stages, Valid,
// Group, Interceptable, Privileged, Failed, Terminal, Accepts, PayloadFor,
// Data, StageFromType, the interceptable index) is read from it: a new
// stage is one line here and its payload type. It is never written.
var stageTable = [...]stageSpec{
	{StageIntake, GroupRun, DecisionAllow | DecisionModify | DecisionDeny, 0, newPayload[Intake]},
	{StageRunStarted, GroupRun, 0, 0, newPayload[RunStarted]},
	{StageStepStarted, GroupStep, DecisionAllow | DecisionStop, 0, newPayload[StepStarted]},
	{StageContextAssembled, GroupModel, DecisionAllow | DecisionModify | DecisionDeny | DecisionStop, privileged, newPayload[ContextAssembled]},
	{StageModelResponded, GroupModel, DecisionAllow | DecisionModify | DecisionDeny | DecisionStop, privileged, newPayload[ModelResponded]},
	{StageModelFailed, GroupModel, 0, failure, newPayload[ModelFailed]},
	{StageToolBefore, GroupTool, DecisionAllow | DecisionModify | DecisionDeny | DecisionMock | DecisionStop | DecisionAsk, 0, newPayload[ToolBefore]},
	{StageToolResult, GroupTool, 0, 0, newPayload[ToolResultRecord]},
	{StageToolAfter, GroupTool, DecisionAllow | DecisionModify, 0, newPayload[ToolAfter]},
	{StageToolFailed, GroupTool, 0, failure, newPayload[ToolFailed]},
	{StageApprovalRequested, GroupApproval, 0, 0, newPayload[ApprovalRequested]},
	{StageApprovalResolved, GroupApproval, 0, 0, newPayload[ApprovalResolved]},
	{StageCompactBefore, GroupCompaction, 0, 0, newPayload[CompactBefore]},
	{StageCompactAfter, GroupCompaction, 0, 0, newPayload[CompactAfter]},
	{StageCompactFailed, GroupCompaction, 0, failure, newPayload[CompactFailed]},
	{StageSubagentBefore, GroupSubagent, DecisionAllow | DecisionModify | DecisionDeny, 0, newPayload[SubagentBefore]},
	{StageSubagentAfter, GroupSubagent, 0, 0, newPayload[SubagentAfter]},
	{StageSubagentFailed, GroupSubagent, 0, failure, newPayload[SubagentFailed]},
	{StageStepCompleted, GroupStep, 0, 0, newPayload[StepCompleted]},
	{StageStop, GroupRun, DecisionAllow | DecisionStop | DecisionContinue, 0, newPayload[Stop]},
	{StageRunCompleted, GroupRun, 0, terminal, newPayload[RunCompleted]},
	{StageRunFailed, GroupRun, 0, terminal | failure, newPayload[RunFailed]},
	{StageHarnessEvent, GroupHarness, 0, 0, newPayload[HarnessEvent]},
	{StageHookDecided, GroupHook, 0, 0, newPayload[HookDecided]},
	{StageHookFailed, GroupHook, 0, failure, newPayload[HookFailed]},
}

func newPayload[T any]() any { return new(T) }

// stageInfo is what the lookup by name gives: the table's row and what is
// derived from it once.
type stageInfo struct {
	*stageSpec
	typ       string       // the CloudEvent type, "hookbus." + name
	intercept int          // position among the interceptable stages, -1 for the others
	data      reflect.Type // the payload type (not a pointer)
}

// stageIndex is stageTable by name. It is built once from stageTable when
// the package is initialised and never written.
var stageIndex = func() map[Stage]stageInfo {
	m := make(map[Stage]stageInfo, len(stageTable))
	n := 0
	for i := range stageTable {
		sp := &stageTable[i]
		info := stageInfo{stageSpec: sp, typ: TypePrefix + string(sp.stage), intercept: -1, data: reflect.TypeOf(sp.payload()).Elem()}
		if sp.accepts != 0 {
			info.intercept = n
			n++
		}
		m[sp.stage] = info
	}
	return m
}()

func (s Stage) info() (stageInfo, bool) {
	info, ok := stageIndex[s]
	return info, ok
}

// Stages returns every stage, in the order a run meets them.
func Stages() []Stage {
	return stagesWhere(func(*stageSpec) bool { return true })
}

// InterceptableStages returns the stages that accept intercepting hooks, in
// the order a run meets them: stage s is at s.InterceptIndex().
func InterceptableStages() []Stage {
	return stagesWhere(func(sp *stageSpec) bool { return sp.accepts != 0 })
}

// stagesWhere returns the stages of stageTable's rows that keep reports
// true for, in the order a run meets them.
func stagesWhere(keep func(*stageSpec) bool) []Stage {
	var out []Stage
	for i := range stageTable {
		if keep(&stageTable[i]) {
			out = append(out, stageTable[i].stage)
		}
	}
	return out
}

// ParseStage returns the stage named s, or an error wrapping ErrUnknownStage.
func ParseStage(s string) (Stage, error) {
	st := Stage(s)
	if !st.Valid() {
		return "", fmt.Errorf("%w: %q (known: %s)", ErrUnknownStage, s, stageList())
	}
	return st, nil
}

// StageFromType returns the stage of a CloudEvent type ("hookbus.tool.before").
func StageFromType(t string) (Stage, error) {
	name, ok := strings.CutPrefix(t, TypePrefix)
	if !ok {
		return "", fmt.Errorf("%w: type %q does not start with %q", ErrUnknownStage, t, TypePrefix)
	}
	return ParseStage(name)
}

func stageList() string {
	names := make([]string, len(stageTable))
	for i := range stageTable {
		names[i] = string(stageTable[i].stage)
	}
	return strings.Join(names, ", ")
}

// Valid reports whether s is a stage hookbus defines.
func (s Stage) Valid() bool {
	_, ok := s.info()
	return ok
}

// Type is the CloudEvent type of the stage: "hookbus." + stage. It does not
// allocate for a stage hookbus defines.
func (s Stage) Type() string {
	if info, ok := s.info(); ok {
		return info.typ
	}
	return TypePrefix + string(s)
}

// Interceptable reports whether intercepting hooks may be registered on the
// stage (the others are observe-only): whether it accepts any decision.
func (s Stage) Interceptable() bool { return s.Accepts() != 0 }

// InterceptIndex numbers the interceptable stages from 0 in the order a run
// meets them (the position in InterceptableStages); it is -1 for an
// observe-only or unknown stage. Tables kept per interceptable stage (an
// interceptor chain's) index by it.
func (s Stage) InterceptIndex() int {
	if info, ok := s.info(); ok {
		return info.intercept
	}
	return -1
}

// Privileged reports whether the stage accepts only trusted interceptors
// (built-in, or plugins granted privileged_hooks): context.assembled and
// model.responded.
func (s Stage) Privileged() bool { return s.has(privileged) }

// Failed reports whether the stage records a failure: model.failed,
// tool.failed, compact.failed, subagent.failed, run.failed, hook.failed.
func (s Stage) Failed() bool { return s.has(failure) }

// Terminal reports whether the stage ends a run (run.completed,
// run.failed): a run has at most one such event, its last.
func (s Stage) Terminal() bool { return s.has(terminal) }

func (s Stage) has(t trait) bool {
	info, ok := s.info()
	return ok && info.traits&t != 0
}

// Group returns the part of a run the stage records; "" for an unknown
// stage.
func (s Stage) Group() Group {
	if info, ok := s.info(); ok {
		return info.group
	}
	return ""
}

// StagesOf returns the stages of the groups, in the order a run meets
// them.
func StagesOf(groups ...Group) []Stage {
	return stagesWhere(func(sp *stageSpec) bool { return slices.Contains(groups, sp.group) })
}

// TerminalStages returns the stages that end a run (run.completed,
// run.failed).
func TerminalStages() []Stage {
	return stagesWhere(func(sp *stageSpec) bool { return sp.traits&terminal != 0 })
}

// Accepts returns the decisions interceptors may give on the stage; none
// for an observe-only or unknown stage.
func (s Stage) Accepts() Decisions {
	if info, ok := s.info(); ok {
		return info.accepts
	}
	return 0
}

// String returns the stage name.
func (s Stage) String() string { return string(s) }
