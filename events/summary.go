package events

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// Summary is a one-line, human-readable account of the event's payload, for
// timelines (observer replay, loop --trace). It never fails: data that does
// not decode is summarised as such.
func (e *Event) Summary() string {
	if e.DataRef != "" && len(e.Data) == 0 {
		return "data stored at " + e.DataRef
	}
	p, err := e.Payload()
	if err != nil {
		return "undecodable data: " + err.Error()
	}
	if s, ok := p.(summarizer); ok {
		return s.summary(e)
	}
	return string(ReadableJSON(e.Data))
}

// summarizer is a payload that says itself on one line: each stage's
// payload type has a summary, next to the others of its group below.
type summarizer interface {
	summary(e *Event) string
}

// The run: intake, run.started, stop, run.completed, run.failed.

func (p *Intake) summary(*Event) string { return quote(p.Prompt) }

func (p *RunStarted) summary(*Event) string {
	s := fmt.Sprintf("%s (history %d messages, max %d steps)", quote(p.Prompt), p.HistoryMessages, p.MaxSteps)
	if p.Resumed {
		s += " resumed"
	}
	return s
}

func (p *Stop) summary(*Event) string {
	if p.Continue != "" {
		return fmt.Sprintf("continue (by %s): %s", p.Plugin, quote(p.Continue))
	}
	return p.Reason
}

func (p *RunCompleted) summary(*Event) string {
	s := p.Reason
	if p.Detail != "" {
		s += " (" + p.Detail + ")"
	}
	if p.Answer != "" {
		s += ": " + quote(p.Answer)
	}
	return s + fmt.Sprintf(" [%d steps, %d+%d tokens]", p.Steps, p.Usage.InputTokens, p.Usage.OutputTokens)
}

func (p *RunFailed) summary(*Event) string { return "error: " + p.Error }

// Steps.

func (p *StepStarted) summary(*Event) string { return fmt.Sprintf("step %d", p.Step) }

func (p *StepCompleted) summary(*Event) string {
	return fmt.Sprintf("step %d, %d tool calls", p.Step, p.ToolCalls)
}

// Model calls.

func (p *ContextAssembled) summary(*Event) string {
	return fmt.Sprintf("%d messages, %d tools", len(p.Messages), len(p.Tools))
}

func (p *ModelResponded) summary(*Event) string {
	s := quote(p.Message.Content)
	if n := len(p.Message.ToolCalls); n > 0 {
		names := make([]string, n)
		for i, c := range p.Message.ToolCalls {
			names[i] = c.Name
		}
		s += " → calls " + strings.Join(names, ", ")
	}
	return s + fmt.Sprintf(" (%d+%d tokens)", p.Usage.InputTokens, p.Usage.OutputTokens)
}

func (p *ModelFailed) summary(*Event) string { return "error: " + p.Error }

// Tool calls.

func (p *ToolBefore) summary(*Event) string { return p.Call.Name + compact(p.Call.Arguments) }

func (p *ToolResultRecord) summary(*Event) string {
	s := p.Call.Name + " → " + quote(p.Result.Content)
	if p.Result.IsError {
		s += " [error]"
	}
	return s + " (raw, before tool.after hooks)"
}

func (p *ToolAfter) summary(*Event) string {
	s := p.Call.Name + " → " + quote(p.Result.Content)
	if p.Result.Mocked {
		s += " [mocked]"
	}
	if p.Result.IsError {
		s += " [error]"
	}
	if p.Context != "" {
		s += " +context " + quote(p.Context)
	}
	return s
}

func (p *ToolFailed) summary(*Event) string {
	s := p.Call.Name + ": " + p.Error
	if p.Panicked {
		s += " [panic]"
	}
	if p.Unknown {
		s += " [outcome unknown]"
	}
	return s
}

// Approvals.

func (p *ApprovalRequested) summary(*Event) string {
	s := p.Call.Name + compact(p.Call.Arguments)
	if p.Plugin != "" {
		s += " asked by " + p.Plugin
	}
	if p.Reason != "" {
		s += ": " + quote(p.Reason)
	}
	if !p.ExpiresAt.IsZero() {
		s += " (expires " + p.ExpiresAt.Format(time.RFC3339) + ")"
	}
	return s
}

func (p *ApprovalResolved) summary(e *Event) string {
	action := cmp.Or(p.Action, map[bool]string{true: "approved", false: "rejected"}[p.Approved])
	s := fmt.Sprintf("call %s %s by %s", p.CallID, action, p.Who())
	if len(p.Arguments) > 0 {
		s += " with arguments " + string(compact(p.Arguments))
	}
	if p.Expired && p.Channel != ChannelExpiry {
		s += " (expired)"
	}
	if p.Reason != "" {
		s += ": " + quote(p.Reason)
	}
	if err := p.Actor.CheckWriter(e.Writer); err != nil {
		s += " [IDENTITY NOT BOUND: " + err.Error() + "]"
	}
	return s
}

// Compactions.

func (p *CompactBefore) summary(*Event) string { return fmt.Sprintf("%d messages", p.Messages) }

func (p *CompactAfter) summary(*Event) string {
	return fmt.Sprintf("%d → %d messages", p.MessagesBefore, p.MessagesAfter)
}

func (p *CompactFailed) summary(*Event) string { return "error: " + p.Error }

// Sub-agent calls.

func (p *SubagentBefore) summary(*Event) string { return p.AgentID + ": " + quote(p.Instruction) }

func (p *SubagentAfter) summary(*Event) string {
	return fmt.Sprintf("%s success=%t %s", p.AgentID, p.Success, quote(p.Answer))
}

func (p *SubagentFailed) summary(*Event) string { return p.AgentID + ": " + p.Error }

// A coding agent's hook events no stage stands for.

func (p *HarnessEvent) summary(*Event) string {
	return p.Harness + " " + p.Event + " " + string(compact(p.Input))
}

// Interceptors' records.

func (p *HookDecided) summary(*Event) string {
	s := fmt.Sprintf("%s %s %s", p.Plugin, p.Stage, p.Decision)
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	if len(p.Patch) > 0 {
		s += " patch " + compact(p.Patch)
	}
	return s + fmt.Sprintf(" (%dµs)", p.LatencyUS)
}

func (p *HookFailed) summary(*Event) string {
	return fmt.Sprintf("%s %s %s (%s, %s): %s", p.Plugin, p.Stage, p.Kind, p.Policy, p.Outcome, p.Error)
}

func quote(s string) string { return Quote(s, 120) }

// compact is JSON on one line for people (ReadableJSON), shortened.
func compact(b []byte) string { return shorten(string(ReadableJSON(b)), 200) }
