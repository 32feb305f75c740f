package audit

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/hookbus/hookbus/events"
)

// quote is s on one line for people, shortened, quoted (events.Quote).
func quote(s string) string { return events.Quote(s, 100) }

// Short is a JSON value on one line for people (events.ReadableJSON: no
// \u0026 for &), shortened to about n characters.
func Short(v json.RawMessage, n int) string {
	s := string(events.ReadableJSON(v))
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// tokens is "in+out tokens", and the cost when known.
func tokens(u events.Usage) string {
	s := fmt.Sprintf("%d+%d tokens", u.InputTokens, u.OutputTokens)
	if u.CostUSD > 0 {
		s += fmt.Sprintf(", $%.4f", u.CostUSD)
	}
	return s
}

func toolText(t *ToolItem) string {
	s := "tool " + t.Call.Name + " " + Short(t.Call.Arguments, 80)
	switch {
	case t.Result != nil:
		s += " → " + quote(t.Result.Content)
		if t.Result.Mocked {
			s += " [mocked]"
		}
		if t.Result.IsError {
			s += " [error]"
		}
	case t.Error != "":
		s += " → failed: " + t.Error
		if t.Panicked {
			s += " [panic]"
		}
		if t.Unknown {
			s += " [outcome unknown]"
		}
	case t.RawResult != nil:
		s += " → " + quote(t.RawResult.Content) + " (raw result; no tool.after recorded)"
	default:
		s += " (no result recorded)"
	}
	if t.Context != "" {
		s += " +context " + quote(t.Context)
	}
	return s
}

func approvalText(a *ApprovalItem) string {
	s := "approval asked by " + cmp.Or(a.Requested.Plugin, "the agent's policy")
	if a.Requested.Reason != "" {
		s += ": " + quote(a.Requested.Reason)
	}
	r := a.Resolved
	if r == nil {
		return s + " → waiting"
	}
	action := cmp.Or(r.Action, map[bool]string{true: "approve", false: "reject"}[r.Approved])
	s += " → " + action + " by " + r.Who()
	if r.Expired && r.Channel != events.ChannelExpiry {
		s += " (expired)"
	}
	if r.Reason != "" {
		s += ": " + quote(r.Reason)
	}
	if r.Comment != "" {
		s += " (comment " + quote(r.Comment) + ")"
	}
	if a.IdentityProblem != "" {
		s += " [IDENTITY NOT BOUND: " + a.IdentityProblem + "]"
	}
	if a.Ignored > 0 {
		s += fmt.Sprintf(" [%d later answer(s) ignored]", a.Ignored)
	}
	return s
}

func subagentText(sa *SubagentItem) string {
	s := "sub-agent " + sa.Before.AgentID
	if sa.Before.Instruction != "" {
		s += " " + quote(sa.Before.Instruction)
	}
	switch {
	case sa.After != nil:
		s += " → " + sa.After.Reason
		if sa.After.Answer != "" {
			s += " " + quote(sa.After.Answer)
		}
		s += " (" + tokens(sa.After.Usage) + ")"
	case sa.Failed != nil:
		s += " → failed: " + sa.Failed.Error
	}
	return s
}
