package gemini

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// Output is the JSON a Gemini CLI hook prints on stdout (exit 0).
type Output struct {
	// Continue false stops Gemini CLI's agent loop; StopReason says why.
	Continue   *bool  `json:"continue,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	// SystemMessage is shown to the user.
	SystemMessage string `json:"systemMessage,omitempty"`
	// Decision "deny" (with Reason) blocks: a tool call (the model is told
	// "Tool execution blocked: <reason>"), a tool's result (replaced by the
	// reason), a prompt, or the agent's answer (AfterAgent: the reason is
	// its next prompt). "ask" makes the user confirm a tool call.
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// HookSpecificOutput carries the event's own fields.
	HookSpecificOutput *SpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// SpecificOutput is the hookSpecificOutput of an Output.
type SpecificOutput struct {
	HookEventName string `json:"hookEventName"`
	// ToolInput (BeforeTool) is merged over the model's arguments.
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
	// AdditionalContext is added to the prompt (BeforeAgent) or the tool's
	// result (AfterTool).
	AdditionalContext string `json:"additionalContext,omitempty"`
}

// Decisions of an Output.
const (
	DecisionDeny = "deny"
	DecisionAsk  = "ask"
)

// JSON is the Output as a hook prints it: "{}" when it says nothing
// (Gemini CLI reads stderr instead when stdout is empty).
func (o *Output) JSON() []byte {
	b, _ := json.Marshal(o) // only strings, bools and valid raw JSON
	return b
}

// Answer words what hookbus decided on in as Gemini CLI's output:
//
//	BeforeTool   deny, mock → decision deny + reason (mock: the mocked
//	             result); ask → decision ask; modify → tool_input (the
//	             arguments after every change); stop → continue false
//	AfterTool    context → additionalContext; modify → decision deny with
//	             the result as the interceptors left it as the reason (the
//	             model is told "Tool result blocked: <result>")
//	BeforeAgent  deny → decision deny; text added to the prompt →
//	             additionalContext
//	AfterAgent   continue → decision deny, the message as the reason (its
//	             next prompt); stop → continue false
//
// Warnings, failures the chain went past and what Gemini CLI cannot be
// told go in systemMessage. The error wraps events.ErrPayload when the
// chain's data does not decode.
func (in *Input) Answer(out *harness.Outcome) (*harness.Reply, error) {
	o, err := in.AnswerOutput(out)
	if err != nil {
		return nil, err
	}
	return &harness.Reply{Stdout: o.JSON()}, nil
}

// AnswerOutput is Answer's Output.
func (in *Input) AnswerOutput(out *harness.Outcome) (*Output, error) {
	if out == nil {
		out = &harness.Outcome{}
	}
	w := &words{in: in, o: &Output{}, notes: append([]string(nil), out.Warnings...)}
	if out.Chain != nil && in.stage() != "" {
		if err := harness.Say(w, in.stage(), out.Chain); err != nil {
			return nil, err
		}
	}
	w.o.SystemMessage = strings.Join(w.notes, "\n")
	return w.o, nil
}

// words say an outcome as Gemini CLI's Output on in.
type words struct {
	in    *Input
	o     *Output
	notes []string
}

func (w *words) spec() *SpecificOutput {
	if w.o.HookSpecificOutput == nil {
		w.o.HookSpecificOutput = &SpecificOutput{HookEventName: w.in.HookEventName}
	}
	return w.o.HookSpecificOutput
}

func (w *words) Note(text string)          { w.notes = append(w.notes, text) }
func (w *words) Again(message string)      { w.Deny(message) }
func (w *words) Context(text string)       { w.spec().AdditionalContext = text }
func (w *words) Call(args json.RawMessage) { w.spec().ToolInput = args }
func (w *words) Result(p events.ToolAfter) { w.o.Decision, w.o.Reason = DecisionDeny, p.Result.Content }

func (w *words) Deny(reason string) {
	w.o.Decision, w.o.Reason = DecisionDeny, cmp.Or(reason, "denied by a hookbus interceptor")
}

func (w *words) Ask(reason string) {
	w.o.Decision, w.o.Reason = DecisionAsk, reason
	if reason != "" {
		w.Note(reason)
	}
}

func (w *words) Stop(reason string) { w.o.Continue, w.o.StopReason = new(bool), reason }

func (w *words) Prompted() *string { return w.in.Prompt }

func (w *words) Replaced(string) {
	w.Note("hookbus interceptors rewrote the prompt, which Gemini CLI cannot replace")
}

// Outage is the answer when hookbus cannot record or decide the event
// (cause): with PolicyIgnore the event proceeds, with a warning; with
// PolicyFail a tool call or a prompt is denied, and the agent's loop
// stopped after a tool or at its answer. Events recorded as a
// harness.event proceed.
func (in *Input) Outage(policy interceptors.Policy, cause error) *harness.Reply {
	msg := fmt.Sprintf("hookbus could not record or check this %s event (%v)", in.HookEventName, cause)
	st := in.stage()
	if policy != interceptors.PolicyFail || !st.Interceptable() {
		if st == "" {
			return &harness.Reply{Stdout: []byte("{}")}
		}
		return &harness.Reply{Stdout: (&Output{SystemMessage: msg + "; it proceeds unchecked"}).JSON()}
	}
	reason := "hookbus is unavailable and its policy is to fail closed: " + cause.Error()
	o, err := in.AnswerOutput(&harness.Outcome{Chain: &interceptors.ChainResult{Stage: st, Decision: interceptors.ClosedKind(st), Reason: reason},
		Warnings: []string{msg + "; blocked (policy fail)"}})
	if err != nil {
		o = &Output{SystemMessage: msg}
	}
	return &harness.Reply{Stdout: o.JSON()}
}
