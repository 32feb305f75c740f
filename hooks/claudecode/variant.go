package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// Variant is a coding agent whose hooks speak Claude Code's schema (its
// events' names, inputs and answers) for the events it has: GitHub Copilot
// CLI (its PascalCase events), Qwen Code, Factory Droid. It reads inputs
// with ParseInput, records the events its Table maps as Claude Code's are
// recorded (its tools normalized with its own action table), every other
// event as a harness.event, and answers as Claude Code is answered. It is
// a harness.Protocol.
type Variant struct {
	// HarnessName is its --harness name; DefaultAgent the agent id its
	// sessions are recorded under by default; Product its name in the
	// record's words ("Qwen Code").
	HarnessName, DefaultAgent, Product string
	// Tools is the action table its tool names are read with.
	Tools events.Harness
	// Table is its hook events and the stage each is recorded as ("": a
	// harness.event); an event not in it is a harness.event too.
	Table harness.Table
	// DefaultLimit is its default timeout for a hook.
	DefaultLimit time.Duration
	// Skip, when set, says an input whose event the table maps is
	// recorded as a harness.event all the same (Qwen Code's empty
	// UserPromptSubmit on a tool-result turn), and why.
	Skip func(in *Input) (why string, skip bool)
	// Fix, when set, adjusts an input read as Claude Code's before it is
	// mapped: a field the agent names its own way (Copilot CLI's
	// tool_result).
	Fix func(in *Input, raw []byte)
	// Native, when set, reads an input without hook_event_name (one the
	// agent sends in its own schema): its event and session, recorded as a
	// harness.event and answered with nothing. ok false: not one either.
	Native func(raw []byte) (event, session string, ok bool)
	// DenyRewrite answers a PreToolUse call the interceptors rewrote with
	// a deny that tells the model the rewritten arguments, for an agent
	// that does not run a rewritten call (Qwen Code): never the model's
	// call in the place of the rewritten one.
	DenyRewrite bool
	// Options change how outcomes are worded.
	Options AnswerOptions
}

// Name is HarnessName.
func (v Variant) Name() string { return v.HarnessName }

// Agent is DefaultAgent.
func (v Variant) Agent() string { return v.DefaultAgent }

// Parse reads one hook input: Claude Code's (ParseInput), else, when
// Native reads it, one in the agent's own schema. The error wraps
// harness.ErrBadInput.
func (v Variant) Parse(raw []byte) (harness.Input, error) {
	in, err := ParseInput(raw)
	if err != nil {
		if v.Native != nil {
			if event, session, ok := v.Native(raw); ok {
				return &nativeInput{v: v, event: event, session: session, raw: bytes.TrimSpace(raw)}, nil
			}
		}
		return nil, err
	}
	if v.Fix != nil {
		v.Fix(in, raw)
	}
	return &variantInput{v: v, Input: in}, nil
}

// variantInput is a hook input of a Variant in Claude Code's schema.
type variantInput struct {
	*Input
	v Variant
}

// Limit is the variant's limit for the event.
func (c *variantInput) Limit() time.Duration {
	return c.v.Table.LimitOf(c.Event(), c.v.DefaultLimit)
}

// stage is the stage the input is recorded as: "" for a harness.event.
func (c *variantInput) stage() events.Stage {
	st := c.v.Table.StageOf(c.Event())
	if st == "" || c.Input.HookEventName.Stage() == "" {
		return ""
	}
	if c.v.Skip != nil {
		if _, skip := c.v.Skip(c.Input); skip {
			return ""
		}
	}
	return st
}

// Map is Claude Code's mapping of the input, its tools normalized with
// the variant's table and Claude Code's name in the record replaced by
// the variant's; nil for an event recorded as a harness.event.
func (c *variantInput) Map() (*harness.Mapped, error) {
	if c.stage() == "" {
		return nil, nil
	}
	m, err := c.Input.ToHookbus()
	if err != nil {
		return nil, err
	}
	m.Normalize(c.v.Tools)
	Rename(m, c.v.Product)
	if p, ok := m.Payload.(events.SubagentBefore); ok {
		p.Description = strings.Replace(p.Description, "Claude Code", c.v.Product, 1)
		m.Payload = p
	}
	return m, nil
}

// Rename puts product (an agent that speaks Claude Code's schema) in the
// place of Claude Code's name in the words of m's run.completed (Detail),
// run.failed (Error) and approval.requested (Reason) payloads.
func Rename(m *harness.Mapped, product string) {
	name := func(s string) string { return strings.Replace(s, "Claude Code", product, 1) }
	switch p := m.Payload.(type) {
	case events.RunCompleted:
		p.Detail = name(p.Detail)
		m.Payload = p
	case events.RunFailed:
		p.Error = name(p.Error)
		m.Payload = p
	case events.ApprovalRequested:
		p.Reason = name(p.Reason)
		m.Payload = p
	}
}

// Answer is AnswerOutcome as the JSON a hook prints (exit 0: a reason
// always travels in the JSON, never as an exit status's stderr); nothing
// on an event recorded as a harness.event.
func (c *variantInput) Answer(out *harness.Outcome) (*harness.Reply, error) {
	if c.stage() == "" {
		return &harness.Reply{}, nil
	}
	if c.v.DenyRewrite && c.Input.HookEventName == PreToolUse && out != nil && out.Chain != nil && out.Chain.Decision == interceptors.Modify {
		p, err := interceptors.ResultData[events.ToolBefore](out.Chain)
		if err != nil {
			return nil, err
		}
		o := *out
		chain := *out.Chain
		chain.Decision = interceptors.Deny
		chain.Reason = fmt.Sprintf("hookbus rewrote this call, which %s does not run in the place of yours: call %s again with the arguments %s", c.v.Product, c.Input.ToolName, compactJSON(p.Call.Arguments))
		o.Chain = &chain
		out = &o
	}
	o, err := AnswerOutcome(c.Input, out, c.v.Options)
	if err != nil {
		return nil, err
	}
	return &harness.Reply{Stdout: o.JSON()}, nil
}

// Outage is OutageAnswer as the JSON a hook prints; nothing on an event
// recorded as a harness.event.
func (c *variantInput) Outage(policy interceptors.Policy, cause error) *harness.Reply {
	if c.stage() == "" {
		return &harness.Reply{}
	}
	return &harness.Reply{Stdout: OutageAnswer(c.Input, policy, cause).JSON()}
}

// nativeInput is a hook input of a Variant in the agent's own schema: a
// harness.event.
type nativeInput struct {
	v              Variant
	event, session string
	raw            []byte
}

func (n *nativeInput) Event() string                 { return n.event }
func (n *nativeInput) Session() string               { return n.session }
func (n *nativeInput) Raw() []byte                   { return n.raw }
func (n *nativeInput) Limit() time.Duration          { return n.v.DefaultLimit }
func (n *nativeInput) Map() (*harness.Mapped, error) { return nil, nil }
func (n *nativeInput) Answer(*harness.Outcome) (*harness.Reply, error) {
	return &harness.Reply{}, nil
}
func (n *nativeInput) Outage(interceptors.Policy, error) *harness.Reply {
	return &harness.Reply{}
}

// Title is Product: the agent's name in the record's words.
func (v Variant) Title() string { return v.Product }

// compactJSON is raw JSON on one line.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
