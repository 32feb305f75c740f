package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// quote is s on one line, shortened, quoted.
func quote(s string) string {
	const max = 100
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Short is a JSON value on one line, shortened to about n bytes.
func Short(v json.RawMessage, n int) string {
	s := string(compactJSON(v))
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

func compactJSON(v json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return v
	}
	return b.Bytes()
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
	s := "approval"
	if a.Requested.Plugin != "" {
		s += " asked by " + a.Requested.Plugin
	} else {
		s += " asked by the agent's policy"
	}
	if a.Requested.Reason != "" {
		s += ": " + quote(a.Requested.Reason)
	}
	r := a.Resolved
	if r == nil {
		return s + " → waiting"
	}
	action := r.Action
	if action == "" {
		action = map[bool]string{true: "approve", false: "reject"}[r.Approved]
	}
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
