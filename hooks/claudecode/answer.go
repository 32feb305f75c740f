package claudecode

import (
	"encoding/json"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// AnswerOptions change how Answer words an outcome.
type AnswerOptions struct {
	// ApproveModified sends permissionDecision "allow" with the
	// updatedInput of a PreToolUse whose input the interceptors changed.
	// Without it the rewritten input goes with no permission decision, and
	// Claude Code's own permission rules still apply to it.
	ApproveModified bool
}

// Answer is the Output that tells Claude Code what hookbus' interceptors
// decided on the event of in (the bridge direction: Claude Code sent its
// hook input to hookbus, which ran the stage's chain; out is the chain's
// outcome, nil when no interceptor matched). docs/PROTOCOL.md, "Claude
// Code hooks", has the table; in short:
//
//	PreToolUse         deny → permissionDecision deny + reason; ask → ask;
//	                   modify → updatedInput (the input after every change);
//	                   mock → deny, the mocked result as the reason;
//	                   stop → continue false + stopReason
//	PostToolUse        context → additionalContext; modify → updatedToolOutput
//	UserPromptSubmit   deny → decision block + reason; text added to the
//	                   prompt → additionalContext
//	Stop               continue → decision block + the message as reason;
//	                   stop → continue false
//	SubagentStart      text added to the instruction → additionalContext
//
// Warnings of the interceptors, failures the chain went past (fail-open)
// and what Claude Code cannot be told (a prompt rewritten other than by
// appending, a denied SubagentStart) go in systemMessage, which Claude Code
// shows the user. The error wraps events.ErrPayload when out.Data does not
// decode as the stage's payload.
func Answer(in *Input, out *interceptors.ChainResult, opts AnswerOptions) (*Output, error) {
	w := &words{in: in, opts: opts, o: &Output{}}
	if out == nil {
		return w.o, nil
	}
	if err := harness.Say(w, in.HookEventName.Stage(), out); err != nil {
		return nil, err
	}
	w.o.SystemMessage = strings.Join(w.notes, "\n")
	return w.o, nil
}

// words say an outcome as Claude Code's Output on in.
type words struct {
	in    *Input
	opts  AnswerOptions
	o     *Output
	notes []string
}

func (w *words) spec() *SpecificOutput {
	if w.o.HookSpecificOutput == nil {
		w.o.HookSpecificOutput = &SpecificOutput{HookEventName: w.in.HookEventName}
	}
	return w.o.HookSpecificOutput
}

func (w *words) Note(text string) { w.notes = append(w.notes, text) }

func (w *words) Deny(reason string) {
	switch w.in.HookEventName {
	case PreToolUse:
		w.spec().PermissionDecision, w.spec().PermissionDecisionReason = PermissionDeny, reason
	case UserPromptSubmit:
		w.o.Decision, w.o.Reason = DecisionBlock, reason
	case SubagentStart:
		w.Note("hookbus denied this sub-agent, which Claude Code cannot block: " + reason)
	}
}

func (w *words) Ask(reason string) {
	w.spec().PermissionDecision, w.spec().PermissionDecisionReason = PermissionAsk, reason
}

func (w *words) Stop(reason string) { w.o.Continue, w.o.StopReason = new(bool), reason }

func (w *words) Context(text string) { w.spec().AdditionalContext = text }

func (w *words) Again(message string) { w.o.Decision, w.o.Reason = DecisionBlock, message }

func (w *words) Call(args json.RawMessage) {
	w.spec().UpdatedInput = arguments(args)
	if w.opts.ApproveModified {
		w.spec().PermissionDecision = PermissionAllow
		w.spec().PermissionDecisionReason = "input rewritten by hookbus interceptors"
	}
}

func (w *words) Result(p events.ToolAfter) {
	if resp := ToolResponse(p.Call, p.Result); strings.HasPrefix(p.Call.Name, "mcp__") {
		w.spec().UpdatedMCPToolOutput = resp
	} else {
		w.spec().UpdatedToolOutput = resp
	}
}

func (w *words) Prompted() *string { return w.in.Prompt }

func (w *words) Replaced(prompt string) {
	w.Note("hookbus interceptors rewrote the prompt, which Claude Code cannot replace; they made it: " + excerpt(prompt, 500))
}

// PermissionAnswer is the Output answering a PermissionRequest hook:
// behavior "allow" (with the input to run, or nil for the input as asked)
// or "deny" (message says why).
func PermissionAnswer(behavior, message string, updatedInput json.RawMessage) *Output {
	return &Output{HookSpecificOutput: &SpecificOutput{HookEventName: PermissionRequest,
		Decision: &PermissionDecision{Behavior: behavior, Message: message, UpdatedInput: updatedInput}}}
}

// JSON is the Output as a hook prints it: "{}" when it says nothing.
func (o *Output) JSON() []byte {
	b, _ := json.Marshal(o) // only strings, bools and valid raw JSON
	return b
}
