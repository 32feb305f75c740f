package prompt

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Verdict is what a prompt or agent hook's model answers, in Claude Code's
// shape: {"ok": true} or {"ok": false, "reason": "..."}. Impossible (Claude
// Code's, on its Stop hooks) says that the condition cannot be met: on the
// stop stage it lets the run end instead of forcing it on.
type Verdict struct {
	OK         bool   `json:"ok"`
	Reason     string `json:"reason,omitempty"`
	Impossible bool   `json:"impossible,omitempty"`
}

// NotMet is the message of a continue forced by a verdict without a reason.
const NotMet = "The hook's condition was not met."

// ParseVerdict reads the verdict out of a model's reply: a JSON object with
// a boolean "ok", alone or in a fenced ```json block or surrounded by text.
// Only top-level objects count (an "ok" nested in another object is not a
// verdict). A reply with no such object, with "ok" not a boolean or
// "reason" not a string, or with verdicts that disagree is an error
// wrapping ErrNoVerdict that says which.
func ParseVerdict(text string) (Verdict, error) {
	var found []Verdict
	objects := 0
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '{')
		if j < 0 {
			break
		}
		start := i + j
		dec := json.NewDecoder(strings.NewReader(text[start:]))
		var obj map[string]json.RawMessage
		if err := dec.Decode(&obj); err != nil {
			i = start + 1 // not an object here: try the next brace
			continue
		}
		objects++
		i = start + int(dec.InputOffset())
		raw, ok := obj["ok"]
		if !ok {
			continue
		}
		v, err := verdictOf(obj, raw)
		if err != nil {
			return Verdict{}, err
		}
		found = append(found, v)
	}
	switch {
	case len(found) == 0 && objects == 0:
		return Verdict{}, fmt.Errorf("%w: the reply holds no valid JSON object (want {\"ok\": true|false, \"reason\": \"...\"}): %.120q", ErrNoVerdict, text)
	case len(found) == 0:
		return Verdict{}, fmt.Errorf("%w: no JSON object of the reply has an \"ok\" field: %.120q", ErrNoVerdict, text)
	}
	for _, v := range found[1:] {
		if v != found[0] {
			return Verdict{}, fmt.Errorf("%w: the reply holds %d verdicts that disagree: %.120q", ErrNoVerdict, len(found), text)
		}
	}
	return found[0], nil
}

func verdictOf(obj map[string]json.RawMessage, raw json.RawMessage) (Verdict, error) {
	var v Verdict
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		v.OK = true
	case "false":
	default:
		return v, fmt.Errorf("%w: \"ok\" is %.40s, not a boolean", ErrNoVerdict, raw)
	}
	if r, ok := obj["reason"]; ok && string(bytes.TrimSpace(r)) != "null" {
		if err := json.Unmarshal(r, &v.Reason); err != nil {
			return v, fmt.Errorf("%w: \"reason\" is %.40s, not a string", ErrNoVerdict, r)
		}
	}
	if r, ok := obj["impossible"]; ok {
		if err := json.Unmarshal(r, &v.Impossible); err != nil {
			return v, fmt.Errorf("%w: \"impossible\" is %.40s, not a boolean", ErrNoVerdict, r)
		}
	}
	return v, nil
}

// Decision is the verdict as a decision on stage, as close to what Claude
// Code does with a prompt hook's answer as the stage allows
// (docs/PROTOCOL.md, "Prompt and agent hooks"): ok allows. Not ok denies
// with the reason where the stage accepts a deny (intake,
// context.assembled, model.responded, tool.before, subagent.before); on
// stop it continues the run with the reason as the message (or allows,
// when the verdict says the condition is impossible); on step.started it
// stops the run; on tool.after, where the tool has run and nothing can be
// refused, the reason goes to the model as context after the result, as
// Claude Code feeds a PostToolUse block's reason to Claude. An
// observe-only stage is an error wrapping interceptors.ErrBadReply.
func (v Verdict) Decision(stage events.Stage) (*interceptors.Decision, error) {
	set := stage.Accepts()
	switch {
	case set == 0:
		return nil, fmt.Errorf("%w: stage %s is observe-only and accepts no decision", interceptors.ErrBadReply, stage)
	case v.OK:
		return &interceptors.Decision{Kind: interceptors.Allow, Reason: v.Reason}, nil
	case set.Has(events.DecisionDeny):
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: v.Reason}, nil
	case set.Has(events.DecisionContinue) && v.Impossible:
		return &interceptors.Decision{Kind: interceptors.Allow, Reason: v.Reason}, nil
	case set.Has(events.DecisionContinue):
		return &interceptors.Decision{Kind: interceptors.Continue, Reason: v.message()}, nil
	case set.Has(events.DecisionStop):
		return &interceptors.Decision{Kind: interceptors.Stop, Reason: v.Reason}, nil
	default: // tool.after: allow and modify only
		return &interceptors.Decision{Kind: interceptors.Allow, Reason: v.Reason, Context: v.message()}, nil
	}
}

// message is the reason, or NotMet when there is none.
func (v Verdict) message() string {
	return cmp.Or(v.Reason, NotMet)
}
