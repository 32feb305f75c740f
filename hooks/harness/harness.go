package harness

import (
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Protocol reads one harness's hook inputs.
type Protocol interface {
	// Name is the harness's name on the command line (loop agent-hook
	// --harness): claude, gemini, codex, copilot, qwen, factory or cline.
	Name() string
	// Agent is the agent id its sessions are recorded under by default
	// (claude-code, gemini-cli, codex-cli).
	Agent() string
	// Parse reads one hook input (a command hook's stdin, an http hook's
	// body). The error wraps ErrBadInput.
	Parse(raw []byte) (Input, error)
}

// Input is one hook input of a harness.
type Input interface {
	// Event is the harness's name of the hook event (hook_event_name).
	Event() string
	// Session is the harness's session id: the hookbus session the event
	// is recorded in.
	Session() string
	// Raw is the input as the harness sent it: a harness.event records it.
	Raw() []byte
	// Map returns the stage event the input is recorded as; nil (and no
	// error) for an event no stage stands for, recorded as a harness.event.
	// The error wraps ErrBadInput for an input that lacks what its event
	// needs.
	Map() (*Mapped, error)
	// Limit is how long the harness waits for a hook of this event before
	// it gives up on it (its default timeout for a command hook of the
	// event, or the cap it applies); 0 when the harness sets none. The
	// bridge answers within it (Within).
	Limit() time.Duration
	// Answer words an outcome as the harness's output.
	Answer(out *Outcome) (*Reply, error)
	// Outage is the answer when hookbus cannot record or decide the event
	// (cause): with PolicyIgnore the event proceeds, with a warning where
	// the harness shows one; with PolicyFail it is blocked where the
	// event can be blocked.
	Outage(policy interceptors.Policy, cause error) *Reply
}

// Mapped is a hook input as a hookbus stage event's parts: the bridge
// builds the event from them with its own ids (events.New(m.Stage, meta
// with Subject m.Subject, m.Payload)).
type Mapped struct {
	Stage events.Stage
	// Subject is the event's subject: the tool name on tool stages and
	// approval.requested, the sub-agent's type on subagent stages.
	Subject string
	// Payload is the stage's payload (events.ToolBefore, ...).
	Payload any
}

// Outcome is what hookbus decided on one hook input, for the harness to
// word as its output.
type Outcome struct {
	// Chain is the interceptors' outcome; nil when none was called. On a
	// permission request (approval.requested) it is the outcome of the
	// tool.before interceptors on the call asked about, when they ran.
	Chain *interceptors.ChainResult
	// Approval is the answer to a permission request (approval.requested),
	// once one is recorded.
	Approval *events.ApprovalResolved
	// Warnings are for the person using the harness (Claude Code's
	// systemMessage), one line each.
	Warnings []string
}

// Reply is a hook's answer: what a command hook prints on stdout and
// stderr and the status it exits with, or an http hook's response body
// (Stdout, with Exit 0).
type Reply struct {
	Stdout []byte
	Stderr string
	Exit   int
}

// Normalize sets the action of the tool call m's payload carries
// (tool.before, tool.after, tool.failed, approval.requested) as harness h
// names its tools (events.NewAction). A payload with no call is left as
// it is.
func (m *Mapped) Normalize(h events.Harness) {
	switch p := m.Payload.(type) {
	case events.ToolBefore:
		p.Call = p.Call.WithAction(h)
		m.Payload = p
	case events.ToolAfter:
		p.Call = p.Call.WithAction(h)
		m.Payload = p
	case events.ToolFailed:
		p.Call = p.Call.WithAction(h)
		m.Payload = p
	case events.ApprovalRequested:
		p.Call = p.Call.WithAction(h)
		m.Payload = p
	}
}

// Kind is the kind of the tool call m's payload carries; "" for a payload
// with no call or a call with no action.
func (m *Mapped) Kind() events.ActionKind {
	switch p := m.Payload.(type) {
	case events.ToolBefore:
		return p.Call.Kind()
	case events.ToolAfter:
		return p.Call.Kind()
	case events.ToolFailed:
		return p.Call.Kind()
	case events.ApprovalRequested:
		return p.Call.Kind()
	}
	return ""
}
