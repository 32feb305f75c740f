package claudecode

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// Harness is Claude Code as a harness of the bridge: it reads Claude
// Code's hook input and words hookbus' outcome as Claude Code's output. It
// is a harness.Protocol.
type Harness struct {
	// Options change how outcomes are worded.
	Options AnswerOptions
}

// Names of Claude Code as a harness.
const (
	// HarnessName is its name on the command line (loop agent-hook
	// --harness claude) and in harness.event records.
	HarnessName = "claude"
	// DefaultAgent is the agent id its sessions are recorded under by
	// default.
	DefaultAgent = "claude-code"
)

// Name is "claude".
func (Harness) Name() string { return HarnessName }

// Agent is "claude-code".
func (Harness) Agent() string { return DefaultAgent }

// Parse reads one Claude Code hook input (ParseInput).
func (h Harness) Parse(raw []byte) (harness.Input, error) {
	in, err := ParseInput(raw)
	if err != nil {
		return nil, err
	}
	return Bridged(in, h.Options), nil
}

// Bridged returns in as a harness.Input answered with opts.
func Bridged(in *Input, opts AnswerOptions) harness.Input {
	return &bridged{Input: in, opts: opts}
}

// bridged is a Claude Code hook input as the bridge handles it.
type bridged struct {
	*Input
	opts AnswerOptions
}

// Map is Input.ToHookbus, with nil for an event recorded as a
// harness.event.
func (b *bridged) Map() (*harness.Mapped, error) {
	m, err := b.Input.ToHookbus()
	if errors.Is(err, ErrUnmapped) {
		return nil, nil
	}
	return m, err
}

// Limit is the event's Limit (the 600 s default for an event hookbus
// does not know).
func (b *bridged) Limit() time.Duration { return b.Input.HookEventName.Limit() }

// Answer is AnswerOutcome as the JSON a hook prints; nothing at all on an
// event recorded as a harness.event (WorktreeCreate reads a command
// hook's stdout as the worktree's path).
func (b *bridged) Answer(out *harness.Outcome) (*harness.Reply, error) {
	if b.Input.HookEventName.Stage() == "" {
		return &harness.Reply{}, nil
	}
	o, err := AnswerOutcome(b.Input, out, b.opts)
	if err != nil {
		return nil, err
	}
	return &harness.Reply{Stdout: o.JSON()}, nil
}

// Outage is OutageAnswer as the JSON a hook prints; nothing on an event
// recorded as a harness.event.
func (b *bridged) Outage(policy interceptors.Policy, cause error) *harness.Reply {
	if b.Input.HookEventName.Stage() == "" {
		return &harness.Reply{}
	}
	return &harness.Reply{Stdout: OutageAnswer(b.Input, policy, cause).JSON()}
}

// AnswerOutcome is the Output that tells Claude Code what hookbus decided
// on in: Answer of out.Chain, and on a PermissionRequest the answer to the
// approval (PermissionAnswer): behavior allow (updatedInput when the
// approver edited the call) or deny (message: who rejected it and why),
// or deny when a tool.before interceptor denied the call asked about.
// out.Warnings go in systemMessage. The error wraps events.ErrPayload when
// the chain's data does not decode.
func AnswerOutcome(in *Input, out *harness.Outcome, opts AnswerOptions) (*Output, error) {
	if out == nil {
		out = &harness.Outcome{}
	}
	var o *Output
	if in.HookEventName == PermissionRequest {
		o = permissionOutcome(out)
	} else {
		var err error
		if o, err = Answer(in, out.Chain, opts); err != nil {
			return nil, err
		}
	}
	for _, w := range out.Warnings {
		o = o.Warn(w)
	}
	return o, nil
}

// permissionOutcome answers a PermissionRequest: nothing (Claude Code's own
// permission flow goes on) until an approval or a tool.before
// interceptor's deny answers it.
func permissionOutcome(out *harness.Outcome) *Output {
	if r := out.Approval; r != nil {
		if r.Approved || r.Action == events.ActionApprove {
			return PermissionAnswer(PermissionAllow, "", r.Arguments)
		}
		return PermissionAnswer(PermissionDeny, RefusalMessage(r), nil)
	}
	if c := out.Chain; c != nil {
		switch c.Decision {
		case interceptors.Deny, interceptors.Stop, interceptors.Mock:
			reason := c.Reason
			if c.Decision == interceptors.Mock && c.Mock != nil {
				reason = c.Mock.Content
			}
			reason = cmp.Or(reason, "denied by a hookbus interceptor")
			return PermissionAnswer(PermissionDeny, reason, nil)
		}
	}
	return &Output{}
}

// RefusalMessage is what the model is told of a refused approval: who
// refused it and why.
func RefusalMessage(r *events.ApprovalResolved) string {
	why := cmp.Or(r.Reason, "no reason given")
	if r.Expired {
		return "no answer in time (hookbus approval expired): " + why
	}
	return fmt.Sprintf("rejected by %s: %s", r.Who(), why)
}

// Warn returns o with msg added to its systemMessage, on a line of its
// own.
func (o *Output) Warn(msg string) *Output {
	c := *o
	if c.SystemMessage != "" {
		c.SystemMessage += "\n"
	}
	c.SystemMessage += msg
	return &c
}

// OutageAnswer is the answer to in when hookbus cannot record or decide it
// (cause): with PolicyIgnore the event proceeds, and Claude Code shows the
// user a warning (systemMessage); with PolicyFail it is blocked as a
// fail-closed interceptor blocks it (a denied tool call, prompt or
// permission request, a stopped run where the event cannot be denied), the
// warning too. Events that cannot be blocked (observe-only) only get the
// warning.
func OutageAnswer(in *Input, policy interceptors.Policy, cause error) *Output {
	msg := fmt.Sprintf("hookbus could not record or check this %s event (%v)", in.HookEventName, cause)
	reason := "hookbus is unavailable and its policy is to fail closed: " + cause.Error()
	if policy == interceptors.PolicyFail && in.HookEventName == PermissionRequest {
		return PermissionAnswer(PermissionDeny, reason, nil).Warn(msg + "; denied (policy fail)")
	}
	if policy != interceptors.PolicyFail || !in.HookEventName.Intercepts() {
		return &Output{SystemMessage: msg + "; it proceeds unchecked"}
	}
	st := in.HookEventName.Stage()
	out, err := Answer(in, &interceptors.ChainResult{Stage: st, Decision: interceptors.ClosedKind(st), Reason: reason}, AnswerOptions{})
	if err != nil {
		out = &Output{}
	}
	return out.Warn(msg + "; blocked (policy fail)")
}
