package codex

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// Codex CLI's hook events besides those of Claude Code it shares.
const (
	Interrupt         = "Interrupt"
	PreModelRequest   = "PreModelRequest"
	PostModelResponse = "PostModelResponse"
)

// Limits Codex CLI applies to hooks.
const (
	// DefaultHookLimit is a command hook's default timeout.
	DefaultHookLimit = 600 * time.Second
	// EndLimit caps the timeout of SessionEnd and Interrupt hooks.
	EndLimit = 3 * time.Second
)

// table is the one list of Codex CLI's hook events and the stage each is
// recorded as ("": a harness.event), in the order a session meets them. It
// is never written.
var table = harness.Table{
	{Name: "SessionStart", Stage: events.StageRunStarted},
	{Name: "UserPromptSubmit", Stage: events.StageIntake},
	{Name: PreModelRequest},
	{Name: PostModelResponse},
	{Name: "PreToolUse", Stage: events.StageToolBefore},
	{Name: "PermissionRequest", Stage: events.StageApprovalRequested},
	{Name: "PostToolUse", Stage: events.StageToolAfter},
	{Name: "SubagentStart", Stage: events.StageSubagentBefore},
	{Name: "SubagentStop", Stage: events.StageSubagentAfter},
	{Name: "PreCompact", Stage: events.StageCompactBefore},
	{Name: "PostCompact", Stage: events.StageCompactAfter},
	{Name: "Stop", Stage: events.StageStop},
	{Name: "StopFailure", Stage: events.StageRunFailed},
	{Name: Interrupt, Stage: events.StageRunCompleted, Limit: EndLimit},
	{Name: "SessionEnd", Stage: events.StageRunCompleted, Limit: EndLimit},
}

// Events returns Codex CLI's hook events, in the order a session meets
// them.
func Events() []string { return table.Names() }

// StageOf returns the stage Codex CLI's event is recorded as; "" for an
// event recorded as a harness.event, or one Codex CLI does not have.
func StageOf(event string) events.Stage { return table.StageOf(event) }

// Harness is Codex CLI as a harness of the bridge (harness.Protocol).
type Harness struct{}

// Names of Codex CLI as a harness.
const (
	// HarnessName is its name on the command line (loop agent-hook
	// --harness codex) and in harness.event records.
	HarnessName = "codex"
	// DefaultAgent is the agent id its sessions are recorded under by
	// default.
	DefaultAgent = "codex-cli"
)

// Name is "codex".
func (Harness) Name() string { return HarnessName }

// Agent is "codex-cli".
func (Harness) Agent() string { return DefaultAgent }

// Parse reads one Codex CLI hook input: Claude Code's input
// (claudecode.ParseInput) with Codex CLI's additions. The error wraps
// harness.ErrBadInput.
func (Harness) Parse(raw []byte) (harness.Input, error) {
	in, err := claudecode.ParseInput(raw)
	if err != nil {
		return nil, err
	}
	return &Input{Input: in}, nil
}

// Input is a Codex CLI hook input: Claude Code's, its session_id the
// thread's id.
type Input struct {
	*claudecode.Input
}

// Limit is the event's default hook timeout: 600 s, 3 s for SessionEnd
// and Interrupt (which Codex CLI caps there).
func (c *Input) Limit() time.Duration { return table.LimitOf(c.Event(), DefaultHookLimit) }

// Map returns the stage event the input is recorded as: Claude Code's
// mapping for the events Codex CLI shares with it, run.completed
// (interrupted) for Interrupt, nil for an event recorded as a
// harness.event.
func (c *Input) Map() (*harness.Mapped, error) {
	switch StageOf(c.Event()) {
	case "":
		return nil, nil
	}
	if c.Event() == Interrupt {
		return &harness.Mapped{Stage: events.StageRunCompleted,
			Payload: events.RunCompleted{Reason: events.ReasonInterrupted, Detail: "Codex CLI turn interrupted"}}, nil
	}
	m, err := c.Input.ToHookbus()
	if err != nil {
		return nil, err
	}
	m.Normalize(events.HarnessCodex)
	claudecode.Rename(m, "Codex CLI")
	return m, nil
}

// Answer words the outcome as Claude Code does (a rewritten tool call
// with permissionDecision allow, which Codex CLI needs to take the
// rewrite), within Codex CLI's rules (Conform). An event recorded as a
// harness.event, and one with nothing to say, answer nothing: empty
// stdout.
func (c *Input) Answer(out *harness.Outcome) (*harness.Reply, error) {
	if StageOf(c.Event()) == "" {
		return &harness.Reply{}, nil
	}
	o, err := claudecode.AnswerOutcome(c.Input, out, claudecode.AnswerOptions{ApproveModified: true})
	if err != nil {
		return nil, err
	}
	return reply(Conform(c.Input, o)), nil
}

// Outage is Claude Code's outage answer within Codex CLI's rules.
func (c *Input) Outage(policy interceptors.Policy, cause error) *harness.Reply {
	if StageOf(c.Event()) == "" {
		return &harness.Reply{}
	}
	return reply(Conform(c.Input, claudecode.OutageAnswer(c.Input, policy, cause)))
}

func reply(o *claudecode.Output) *harness.Reply {
	b := o.JSON()
	if string(b) == "{}" {
		return &harness.Reply{}
	}
	return &harness.Reply{Stdout: b}
}

// Conform returns o as Codex CLI takes it on in's event, saying in
// systemMessage what it had to change:
//
//   - PreToolUse: continue false (stop) and permissionDecision ask become
//     deny with the reason; a deny without a reason gets one; updatedInput
//     goes with permissionDecision allow, and allow without updatedInput
//     is dropped, as is a reason without a decision;
//   - PermissionRequest: an approval with edited arguments (updatedInput,
//     which Codex CLI refuses there) becomes a deny that tells the model
//     the arguments approved; interrupt is dropped;
//   - PostToolUse: a replaced output (updatedToolOutput) of a tool other
//     than an MCP server's cannot be given and is said in systemMessage;
//   - other events: hookSpecificOutput only where Codex CLI reads one
//     (UserPromptSubmit, SessionStart, SubagentStart).
func Conform(in *claudecode.Input, o *claudecode.Output) *claudecode.Output {
	c := *o
	c.SuppressOutput = false
	var notes []string
	hs := c.HookSpecificOutput
	if hs != nil {
		h := *hs
		hs = &h
		c.HookSpecificOutput = hs
	}
	switch in.HookEventName {
	case claudecode.PreToolUse:
		if c.Continue != nil && !*c.Continue {
			if hs == nil {
				hs = &claudecode.SpecificOutput{HookEventName: claudecode.PreToolUse}
				c.HookSpecificOutput = hs
			}
			hs.PermissionDecision, hs.PermissionDecisionReason = claudecode.PermissionDeny, c.StopReason
			hs.UpdatedInput = nil
			notes = append(notes, "hookbus stopped the run, which Codex CLI's PreToolUse cannot: the call is denied")
			c.Continue, c.StopReason = nil, ""
		}
		if hs != nil {
			switch hs.PermissionDecision {
			case claudecode.PermissionAsk:
				hs.PermissionDecision = claudecode.PermissionDeny
				hs.PermissionDecisionReason = "a person must approve this call, which Codex CLI's PreToolUse cannot ask for: " + hs.PermissionDecisionReason
				hs.UpdatedInput = nil
			case claudecode.PermissionDefer:
				hs.PermissionDecision = ""
			}
			switch {
			case hs.PermissionDecision == claudecode.PermissionDeny:
				hs.UpdatedInput = nil
				if strings.TrimSpace(hs.PermissionDecisionReason) == "" {
					hs.PermissionDecisionReason = "denied by a hookbus interceptor"
				}
			case len(hs.UpdatedInput) > 0:
				hs.PermissionDecision = claudecode.PermissionAllow
			case hs.PermissionDecision == claudecode.PermissionAllow:
				hs.PermissionDecision = ""
			}
			if hs.PermissionDecision == "" {
				hs.PermissionDecisionReason = ""
			}
			hs.UpdatedToolOutput, hs.UpdatedMCPToolOutput, hs.Decision = nil, nil, nil
		}
		if c.Decision == "approve" || (c.Decision == "" && c.Reason != "") {
			c.Decision, c.Reason = "", ""
		}
	case claudecode.PermissionRequest:
		c.Continue, c.StopReason = nil, ""
		if hs != nil && hs.Decision != nil {
			d := *hs.Decision
			if d.Behavior == claudecode.PermissionAllow && len(d.UpdatedInput) > 0 {
				d = claudecode.PermissionDecision{Behavior: claudecode.PermissionDeny,
					Message: fmt.Sprintf("approved with changed arguments, which Codex CLI cannot run in place of the asked ones: run it again as %s", compact(d.UpdatedInput))}
			}
			d.UpdatedInput, d.Interrupt = nil, false
			hs.Decision = &d
			hs.PermissionDecision, hs.PermissionDecisionReason, hs.UpdatedInput, hs.AdditionalContext = "", "", nil, ""
		}
	case claudecode.PostToolUse:
		if hs != nil {
			if len(hs.UpdatedToolOutput) > 0 {
				notes = append(notes, "hookbus interceptors replaced this tool's output, which Codex CLI can replace only for an MCP server's tool")
				hs.UpdatedToolOutput = nil
			}
			hs.PermissionDecision, hs.PermissionDecisionReason, hs.UpdatedInput, hs.Decision = "", "", nil, nil
		}
	case claudecode.UserPromptSubmit, claudecode.SessionStart, claudecode.SubagentStart:
	default:
		c.HookSpecificOutput = nil
	}
	if hs != nil && hs.HookEventName != "" && hs.PermissionDecision == "" && hs.PermissionDecisionReason == "" && len(hs.UpdatedInput) == 0 &&
		hs.AdditionalContext == "" && len(hs.UpdatedToolOutput) == 0 && len(hs.UpdatedMCPToolOutput) == 0 && hs.Decision == nil {
		c.HookSpecificOutput = nil
	}
	for _, n := range notes {
		c = *c.Warn(n)
	}
	return &c
}

// compact is raw JSON on one line.
func compact(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
