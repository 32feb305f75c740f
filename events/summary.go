package events

import (
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
	switch p := p.(type) {
	case *Intake:
		return quote(p.Prompt)
	case *RunStarted:
		s := fmt.Sprintf("%s (history %d messages, max %d steps)", quote(p.Prompt), p.HistoryMessages, p.MaxSteps)
		if p.Resumed {
			s += " resumed"
		}
		return s
	case *StepStarted:
		return fmt.Sprintf("step %d", p.Step)
	case *ContextAssembled:
		return fmt.Sprintf("%d messages, %d tools", len(p.Messages), len(p.Tools))
	case *ModelResponded:
		s := quote(p.Message.Content)
		if n := len(p.Message.ToolCalls); n > 0 {
			names := make([]string, n)
			for i, c := range p.Message.ToolCalls {
				names[i] = c.Name
			}
			s += " → calls " + strings.Join(names, ", ")
		}
		return s + fmt.Sprintf(" (%d+%d tokens)", p.Usage.InputTokens, p.Usage.OutputTokens)
	case *ModelFailed:
		return "error: " + p.Error
	case *ToolBefore:
		return p.Call.Name + compact(p.Call.Arguments)
	case *ToolResultRecord:
		s := p.Call.Name + " → " + quote(p.Result.Content)
		if p.Result.IsError {
			s += " [error]"
		}
		return s + " (raw, before tool.after hooks)"
	case *ToolAfter:
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
	case *ToolFailed:
		s := p.Call.Name + ": " + p.Error
		if p.Panicked {
			s += " [panic]"
		}
		if p.Unknown {
			s += " [outcome unknown]"
		}
		return s
	case *ApprovalRequested:
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
	case *ApprovalResolved:
		action := p.Action
		if action == "" {
			action = map[bool]string{true: "approved", false: "rejected"}[p.Approved]
		}
		s := fmt.Sprintf("call %s %s by %s", p.CallID, action, p.Who())
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
	case *CompactBefore:
		return fmt.Sprintf("%d messages", p.Messages)
	case *CompactAfter:
		return fmt.Sprintf("%d → %d messages", p.MessagesBefore, p.MessagesAfter)
	case *CompactFailed:
		return "error: " + p.Error
	case *SubagentBefore:
		return p.AgentID + ": " + quote(p.Instruction)
	case *SubagentAfter:
		return fmt.Sprintf("%s success=%t %s", p.AgentID, p.Success, quote(p.Answer))
	case *SubagentFailed:
		return p.AgentID + ": " + p.Error
	case *StepCompleted:
		return fmt.Sprintf("step %d, %d tool calls", p.Step, p.ToolCalls)
	case *Stop:
		if p.Continue != "" {
			return fmt.Sprintf("continue (by %s): %s", p.Plugin, quote(p.Continue))
		}
		return p.Reason
	case *RunCompleted:
		s := p.Reason
		if p.Detail != "" {
			s += " (" + p.Detail + ")"
		}
		if p.Answer != "" {
			s += ": " + quote(p.Answer)
		}
		return s + fmt.Sprintf(" [%d steps, %d+%d tokens]", p.Steps, p.Usage.InputTokens, p.Usage.OutputTokens)
	case *RunFailed:
		return "error: " + p.Error
	case *HookDecided:
		s := fmt.Sprintf("%s %s %s", p.Plugin, p.Stage, p.Decision)
		if p.Reason != "" {
			s += ": " + p.Reason
		}
		if len(p.Patch) > 0 {
			s += " patch " + compact(p.Patch)
		}
		return s + fmt.Sprintf(" (%dµs)", p.LatencyUS)
	case *HookFailed:
		return fmt.Sprintf("%s %s %s (%s, %s): %s", p.Plugin, p.Stage, p.Kind, p.Policy, p.Outcome, p.Error)
	}
	return string(ReadableJSON(e.Data))
}

func quote(s string) string { return Quote(s, 120) }

// compact is JSON on one line for people (ReadableJSON), shortened.
func compact(b []byte) string { return shorten(string(ReadableJSON(b)), 200) }
