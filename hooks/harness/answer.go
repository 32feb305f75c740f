package harness

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Words are what a harness's answer can say, each in the harness's own
// wire format. Say calls those a chain's outcome asks for; what a
// harness's hooks cannot say, its Words leave unsaid.
type Words interface {
	// Note is a line for the person using the harness.
	Note(text string)
	// Deny refuses what the event asked for: a tool call (for a mock, the
	// reason is the mocked result), a prompt, a sub-agent.
	Deny(reason string)
	// Ask has the user confirm a tool call.
	Ask(reason string)
	// Stop ends the agent's loop.
	Stop(reason string)
	// Context is text the interceptors added for the model: to a tool's
	// result, a prompt or a sub-agent's instruction.
	Context(text string)
	// Again sends the agent on instead of stopping, with message.
	Again(message string)
	// Call runs the tool call with the interceptors' arguments.
	Call(args json.RawMessage)
	// Result is the tool's result as the interceptors left it.
	Result(p events.ToolAfter)
	// Prompted is the prompt as the harness sent it; nil when it sent none.
	Prompted() *string
	// Replaced says that the interceptors replaced the prompt (with
	// prompt) other than by adding to it, which hooks cannot do.
	Replaced(prompt string)
}

// Say words c, a chain's outcome on a hook event of stage st, with w: a
// note for each interceptor's warnings and each failure the chain went
// past, then what the decision means on the stage:
//
//	tool.before      deny → Deny; mock → Deny with the mocked result (the
//	                 reason when there is none); ask → Ask; stop → Stop;
//	                 modify → Call
//	tool.after       context → Context; modify → Result; stop → Stop
//	intake           deny → Deny; modify → Context with the text added
//	                 to the prompt, else Replaced
//	stop             continue → Again, with the text added for the model
//	                 (else the reason); stop → Stop
//	subagent.before  deny → Deny; modify → Context with the instruction
//
// The error wraps events.ErrPayload when a modify's data does not decode.
func Say(w Words, st events.Stage, c *interceptors.ChainResult) error {
	for _, r := range c.Records {
		for _, n := range r.Warnings {
			w.Note(n)
		}
		if r.Failure != nil && r.Failure.Outcome == interceptors.FailedOpen {
			w.Note(fmt.Sprintf("hookbus: interceptor %s failed (%s); the action proceeds", r.Plugin, r.Failure.Kind))
		}
	}
	context := strings.Join(c.Context, "\n")
	if st == events.StageToolAfter && context != "" {
		w.Context(context)
	}
	switch d := c.Decision; {
	case d == interceptors.Deny:
		w.Deny(c.Reason)
	case d == interceptors.Stop:
		w.Stop(c.Reason)
	case d == interceptors.Ask:
		w.Ask(c.Reason)
	case d == interceptors.Mock && c.Mock != nil:
		w.Deny(c.Mock.Content)
	case d == interceptors.Mock:
		w.Deny(c.Reason)
	case d == interceptors.Continue && context == "":
		w.Again(c.Reason)
	case d == interceptors.Continue:
		w.Again(context)
	case d == interceptors.Modify:
		return rewrite(w, st, c)
	}
	return nil
}

// rewrite says the payload a modify left, by its stage.
func rewrite(w Words, st events.Stage, c *interceptors.ChainResult) error {
	switch st {
	case events.StageToolBefore:
		return with(c, func(p events.ToolBefore) { w.Call(p.Call.Arguments) })
	case events.StageToolAfter:
		return with(c, w.Result)
	case events.StageIntake:
		return with(c, func(p events.Intake) { prompt(w, p.Prompt) })
	case events.StageSubagentBefore:
		return with(c, func(p events.SubagentBefore) {
			if p.Instruction != "" {
				w.Context(p.Instruction)
			}
		})
	}
	return nil
}

// with calls say with the payload c left, as T (ResultData).
func with[T any](c *interceptors.ChainResult, say func(T)) error {
	p, err := interceptors.ResultData[T](c)
	if err == nil {
		say(p)
	}
	return err
}

// prompt says a prompt the interceptors left as rewritten: what they added
// to the harness's, as context, or that they replaced it.
func prompt(w Words, rewritten string) {
	orig := ""
	if p := w.Prompted(); p != nil {
		orig = *p
	}
	if added, replaced := PromptAddition(orig, rewritten); added != "" {
		w.Context(added)
	} else if replaced {
		w.Replaced(rewritten)
	}
}
