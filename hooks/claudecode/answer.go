package claudecode

import (
	"encoding/json"
	"fmt"
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
	o := &Output{}
	if out == nil {
		return o, nil
	}
	var notes []string
	for _, r := range out.Records {
		notes = append(notes, r.Warnings...)
		if r.Failure != nil && r.Failure.Outcome == interceptors.FailedOpen {
			notes = append(notes, fmt.Sprintf("hookbus: interceptor %s failed (%s); the action proceeds", r.Plugin, r.Failure.Kind))
		}
	}
	reason := out.Reason
	spec := func() *SpecificOutput {
		if o.HookSpecificOutput == nil {
			o.HookSpecificOutput = &SpecificOutput{HookEventName: in.HookEventName}
		}
		return o.HookSpecificOutput
	}
	stop := func() {
		f := false
		o.Continue, o.StopReason = &f, reason
	}
	switch in.HookEventName {
	case PreToolUse:
		switch out.Decision {
		case interceptors.Deny:
			spec().PermissionDecision, spec().PermissionDecisionReason = PermissionDeny, reason
		case interceptors.Ask:
			spec().PermissionDecision, spec().PermissionDecisionReason = PermissionAsk, reason
		case interceptors.Mock:
			text := reason
			if out.Mock != nil {
				text = out.Mock.Content
			}
			spec().PermissionDecision, spec().PermissionDecisionReason = PermissionDeny, text
		case interceptors.Stop:
			stop()
		case interceptors.Modify:
			p, err := interceptors.ResultData[events.ToolBefore](out)
			if err != nil {
				return nil, err
			}
			spec().UpdatedInput = arguments(p.Call.Arguments)
			if opts.ApproveModified {
				spec().PermissionDecision = PermissionAllow
				spec().PermissionDecisionReason = "input rewritten by hookbus interceptors"
			}
		}
	case PostToolUse:
		if ctx := strings.Join(out.Context, "\n"); ctx != "" {
			spec().AdditionalContext = ctx
		}
		switch out.Decision {
		case interceptors.Modify:
			p, err := interceptors.ResultData[events.ToolAfter](out)
			if err != nil {
				return nil, err
			}
			resp := ToolResponse(p.Call, p.Result)
			if strings.HasPrefix(p.Call.Name, "mcp__") {
				spec().UpdatedMCPToolOutput = resp
			} else {
				spec().UpdatedToolOutput = resp
			}
		case interceptors.Stop: // a fail-closed failure
			stop()
		}
	case UserPromptSubmit:
		switch out.Decision {
		case interceptors.Deny:
			o.Decision, o.Reason = DecisionBlock, reason
		case interceptors.Modify:
			p, err := interceptors.ResultData[events.Intake](out)
			if err != nil {
				return nil, err
			}
			orig := ""
			if in.Prompt != nil {
				orig = *in.Prompt
			}
			if added, replaced := harness.PromptAddition(orig, p.Prompt); added != "" {
				spec().AdditionalContext = added
			} else if replaced {
				notes = append(notes, "hookbus interceptors rewrote the prompt, which Claude Code cannot replace; they made it: "+excerpt(p.Prompt, 500))
			}
		}
	case Stop:
		switch out.Decision {
		case interceptors.Continue:
			o.Decision, o.Reason = DecisionBlock, strings.Join(out.Context, "\n")
			if o.Reason == "" {
				o.Reason = reason
			}
		case interceptors.Stop:
			stop()
		}
	case SubagentStart:
		switch out.Decision {
		case interceptors.Deny:
			notes = append(notes, "hookbus denied this sub-agent, which Claude Code cannot block: "+reason)
		case interceptors.Modify:
			p, err := interceptors.ResultData[events.SubagentBefore](out)
			if err != nil {
				return nil, err
			}
			if p.Instruction != "" {
				spec().AdditionalContext = p.Instruction
			}
		}
	}
	o.SystemMessage = strings.Join(notes, "\n")
	return o, nil
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
