package events

import (
	"fmt"
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

// stageSpec is one row of stageTable.
type stageSpec struct {
	stage Stage
	// accepts is what interceptors may decide on the stage; none means
	// observe-only (no intercepting hook may register).
	accepts Decisions
	// privileged stages accept only trusted interceptors (built-in, or
	// plugins granted privileged_hooks).
	privileged bool
	// payload returns a pointer to a new zero value of the stage's data.
	payload func() any
}

// stageTable is the one list of stages, in the order a run meets them
// (DESIGN.md's stage table). Everything else about stages (Stages, Valid,
// Interceptable, Privileged, Accepts, PayloadFor, StageFromType, the
// interceptable index) is read from it: a new stage is one line here. It is
// never written.
var stageTable = [...]stageSpec{
	{StageIntake, DecisionAllow | DecisionModify | DecisionDeny, false, newPayload[Intake]},
	{StageRunStarted, 0, false, newPayload[RunStarted]},
	{StageStepStarted, DecisionAllow | DecisionStop, false, newPayload[StepStarted]},
	{StageContextAssembled, DecisionAllow | DecisionModify | DecisionDeny | DecisionStop, true, newPayload[ContextAssembled]},
	{StageModelResponded, DecisionAllow | DecisionModify | DecisionDeny | DecisionStop, true, newPayload[ModelResponded]},
	{StageModelFailed, 0, false, newPayload[ModelFailed]},
	{StageToolBefore, DecisionAllow | DecisionModify | DecisionDeny | DecisionMock | DecisionStop | DecisionAsk, false, newPayload[ToolBefore]},
	{StageToolResult, 0, false, newPayload[ToolResultRecord]},
	{StageToolAfter, DecisionAllow | DecisionModify, false, newPayload[ToolAfter]},
	{StageToolFailed, 0, false, newPayload[ToolFailed]},
	{StageApprovalRequested, 0, false, newPayload[ApprovalRequested]},
	{StageApprovalResolved, 0, false, newPayload[ApprovalResolved]},
	{StageCompactBefore, 0, false, newPayload[CompactBefore]},
	{StageCompactAfter, 0, false, newPayload[CompactAfter]},
	{StageCompactFailed, 0, false, newPayload[CompactFailed]},
	{StageSubagentBefore, DecisionAllow | DecisionModify | DecisionDeny, false, newPayload[SubagentBefore]},
	{StageSubagentAfter, 0, false, newPayload[SubagentAfter]},
	{StageSubagentFailed, 0, false, newPayload[SubagentFailed]},
	{StageStepCompleted, 0, false, newPayload[StepCompleted]},
	{StageStop, DecisionAllow | DecisionStop | DecisionContinue, false, newPayload[Stop]},
	{StageRunCompleted, 0, false, newPayload[RunCompleted]},
	{StageRunFailed, 0, false, newPayload[RunFailed]},
	{StageHarnessEvent, 0, false, newPayload[HarnessEvent]},
	{StageHookDecided, 0, false, newPayload[HookDecided]},
	{StageHookFailed, 0, false, newPayload[HookFailed]},
}

func newPayload[T any]() any { return new(T) }

// stageInfo is what the lookup by name gives: the table's row and what is
// derived from it once.
type stageInfo struct {
	*stageSpec
	typ       string // the CloudEvent type, "hookbus." + name
	intercept int    // position among the interceptable stages, -1 for the others
}

// stageIndex is stageTable by name. It is built once from stageTable when
// the package is initialised and never written.
var stageIndex = func() map[Stage]stageInfo {
	m := make(map[Stage]stageInfo, len(stageTable))
	n := 0
	for i := range stageTable {
		sp := &stageTable[i]
		info := stageInfo{stageSpec: sp, typ: TypePrefix + string(sp.stage), intercept: -1}
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
	out := make([]Stage, len(stageTable))
	for i := range stageTable {
		out[i] = stageTable[i].stage
	}
	return out
}

// InterceptableStages returns the stages that accept intercepting hooks, in
// the order a run meets them: stage s is at s.InterceptIndex().
func InterceptableStages() []Stage {
	var out []Stage
	for i := range stageTable {
		if stageTable[i].accepts != 0 {
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
func (s Stage) Privileged() bool {
	info, ok := s.info()
	return ok && info.privileged
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
