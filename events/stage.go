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
	StageHookDecided       Stage = "hook.decided"
	StageHookFailed        Stage = "hook.failed"
)

// TypePrefix prefixes every hookbus CloudEvent type.
const TypePrefix = "hookbus."

// Stages returns every stage, in the order a run meets them.
func Stages() []Stage {
	return []Stage{
		StageIntake, StageRunStarted, StageStepStarted, StageContextAssembled,
		StageModelResponded, StageModelFailed, StageToolBefore, StageToolResult, StageToolAfter,
		StageToolFailed, StageApprovalRequested, StageApprovalResolved,
		StageCompactBefore, StageCompactAfter, StageCompactFailed,
		StageSubagentBefore, StageSubagentAfter, StageSubagentFailed,
		StageStepCompleted, StageStop, StageRunCompleted, StageRunFailed,
		StageHookDecided, StageHookFailed,
	}
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
	if !strings.HasPrefix(t, TypePrefix) {
		return "", fmt.Errorf("%w: type %q does not start with %q", ErrUnknownStage, t, TypePrefix)
	}
	return ParseStage(strings.TrimPrefix(t, TypePrefix))
}

func stageList() string {
	all := Stages()
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Valid reports whether s is a stage hookbus defines.
func (s Stage) Valid() bool {
	switch s {
	case StageIntake, StageRunStarted, StageStepStarted, StageContextAssembled,
		StageModelResponded, StageModelFailed, StageToolBefore, StageToolResult, StageToolAfter,
		StageToolFailed, StageApprovalRequested, StageApprovalResolved,
		StageCompactBefore, StageCompactAfter, StageCompactFailed,
		StageSubagentBefore, StageSubagentAfter, StageSubagentFailed,
		StageStepCompleted, StageStop, StageRunCompleted, StageRunFailed,
		StageHookDecided, StageHookFailed:
		return true
	}
	return false
}

// Type is the CloudEvent type of the stage: "hookbus." + stage.
func (s Stage) Type() string { return TypePrefix + string(s) }

// Interceptable reports whether intercepting hooks may be registered on the
// stage (the others are observe-only).
func (s Stage) Interceptable() bool {
	switch s {
	case StageIntake, StageStepStarted, StageContextAssembled, StageModelResponded,
		StageToolBefore, StageToolAfter, StageSubagentBefore, StageStop:
		return true
	}
	return false
}

// Privileged reports whether the stage accepts only trusted interceptors
// (built-in, or plugins granted privileged_hooks): context.assembled and
// model.responded.
func (s Stage) Privileged() bool {
	return s == StageContextAssembled || s == StageModelResponded
}

// String returns the stage name.
func (s Stage) String() string { return string(s) }
