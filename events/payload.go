package events

import (
	"encoding/json"
	"time"
)

// The payload of each stage. Every event's data is the JSON of one of these
// types; PayloadFor returns a new value of the right one.

// Intake is the data of intake: the validated run request, before session
// resolution. Interceptors may modify it or deny (reject) the run.
type Intake struct {
	// Prompt is the user's request.
	Prompt string `json:"prompt"`
	// Metadata is the run request's metadata, strings by name.
	Metadata map[string]string `json:"metadata,omitempty"`
	// HistoryMessages is how many messages the session had before this
	// run (0 on its first run): what run.started's says, known already.
	HistoryMessages int `json:"history_messages,omitempty"`
}

// RunStarted is the data of run.started: the session was resolved.
type RunStarted struct {
	Prompt string `json:"prompt"`
	// HistoryMessages is how many earlier messages were rebuilt from the
	// session's events.
	HistoryMessages int `json:"history_messages"`
	// Resumed is true when the run continues an interrupted earlier attempt
	// of the same run id.
	Resumed  bool `json:"resumed,omitempty"`
	MaxSteps int  `json:"max_steps"`
	// ParentTraceparent is the trace context the run continues: its
	// request's (a caller's, or the parent run's tool call for a child
	// run); empty when the run's trace is its own. The run's span is its
	// child (docs/PROTOCOL.md, "Trace context").
	ParentTraceparent string `json:"parent_traceparent,omitempty"`
	// Definition is the agent definition the attempt runs on (absent when
	// the worker has none: a library engine without one).
	Definition *Definition `json:"definition,omitempty"`
	// PreviousDefinition, on an attempt that adopted a run started on
	// another definition (the agent's on_definition_change: adopt), is the
	// definition the run's record had until then.
	PreviousDefinition *Definition `json:"previous_definition,omitempty"`
	// Worker is the process the attempt runs in, when it says (a worker of
	// the run queue, loop serve, does): a run resumed elsewhere has
	// attempts with different workers.
	Worker *Worker `json:"worker,omitempty"`
}

// Worker names the process an attempt runs in (run.started's worker).
type Worker struct {
	// Name is its name in the fleet (the hookbus_workers bucket): host:pid
	// unless it was given one.
	Name string `json:"name"`
	// Host is the host name of the machine it runs on.
	Host string `json:"host,omitempty"`
}

// StepStarted is the data of step.started.
type StepStarted struct {
	// Step numbers the run's steps from 1.
	Step int `json:"step"`
}

// ContextAssembled is the data of context.assembled: what the model is about
// to see. Privileged interceptors may rewrite it.
type ContextAssembled struct {
	// Messages is the conversation the model is given, in order.
	Messages []Message `json:"messages"`
	// Tools are the tools the model may call.
	Tools []ToolSpec `json:"tools,omitempty"`
}

// ModelResponded is the data of model.responded: the model's reply, before
// any tool runs. Privileged interceptors may rewrite it.
type ModelResponded struct {
	// Message is the model's reply (role assistant), with the tool calls it
	// asks for.
	Message Message `json:"message"`
	// Usage is what the call used.
	Usage Usage `json:"usage"`
	// FinishReason is why the model stopped: stop, tool_calls, length,
	// content_filter (as the provider says).
	FinishReason string `json:"finish_reason,omitempty"`
	// Model names the model that answered.
	Model string `json:"model,omitempty"`
	// Provider names the model provider ("openai", "anthropic", ...).
	Provider string `json:"provider,omitempty"`
}

// ModelFailed is the data of model.failed: one failed model call. A run
// whose call is retried has one model.failed per failed attempt.
type ModelFailed struct {
	// Error says what failed.
	Error string `json:"error"`
	// Provider names the model provider ("openai", "anthropic", ...).
	Provider string `json:"provider,omitempty"`
	// Status is the HTTP status of the provider's answer (0: none).
	Status int `json:"status,omitempty"`
	// Type is the provider's error type or code ("rate_limit_error",
	// "overloaded_error", ...) or hookbus' ("timeout", "bad_response",
	// "connection").
	Type string `json:"type,omitempty"`
	// Attempt numbers the call's attempts from 1.
	Attempt int `json:"attempt,omitempty"`
	// RetryInMS is set when the call is retried: the wait before the next
	// attempt, in milliseconds (the provider's Retry-After when it gave
	// one). Absent on the attempt that ends the run.
	RetryInMS int64 `json:"retry_in_ms,omitempty"`
}

// ToolBefore is the data of tool.before: a tool call about to run.
type ToolBefore struct {
	// Call is the tool call about to run.
	Call ToolCall `json:"call"`
}

// ToolAfter is the data of tool.after: a finished tool call and its result.
// Context, set by interceptors, is extra text given to the model with the
// result.
type ToolAfter struct {
	// Call is the tool call, as it ran.
	Call ToolCall `json:"call"`
	// Result is the tool's result, as the tool.after interceptors left it.
	Result  ToolResult `json:"result"`
	Context string     `json:"context,omitempty"`
}

// ToolFailed is the data of tool.failed: the tool returned an error or
// panicked, or its outcome is unknown.
type ToolFailed struct {
	// Call is the tool call that failed.
	Call ToolCall `json:"call"`
	// Error is the tool's error (or the panic's value).
	Error string `json:"error"`
	// Panicked is set when the tool panicked.
	Panicked bool `json:"panicked,omitempty"`
	// Unknown is set when the worker running the tool stopped before its
	// result was recorded, and the resumed run did not run it again (the
	// tool is not idempotent): whether it had an effect is unknown.
	Unknown bool `json:"unknown,omitempty"`
}

// ToolResultRecord is the data of tool.result: a tool's raw result,
// recorded before any tool.after interceptor runs, so that a worker that
// dies while they run does not run the tool again when the run resumes.
type ToolResultRecord struct {
	// Call is the tool call, as it ran.
	Call ToolCall `json:"call"`
	// Result is the tool's raw result.
	Result ToolResult `json:"result"`
}

// ApprovalRequested is the data of approval.requested: a tool call waits
// for a human. The run's attempt ends after its step's other calls; the
// run resumes when every call of the step waiting for an answer has one
// (approval.resolved).
type ApprovalRequested struct {
	// Call is the call as it will run when approved (after the tool.before
	// hooks' changes).
	Call ToolCall `json:"call"`
	// Plugin is the hook that asked; empty when the agent's approval
	// policy did.
	Plugin string `json:"plugin,omitempty"`
	// Reason is why a human is asked.
	Reason string `json:"reason,omitempty"`
	// ExpiresAt is when an unanswered request resolves by OnExpiry.
	ExpiresAt time.Time `json:"expires_at,omitempty"`
	// OnExpiry is what an unanswered request becomes: an Action
	// (reject_and_continue, the "deny" default; reject; approve).
	OnExpiry string `json:"on_expiry,omitempty"`
	// Suggestions are what the coding agent that asked offers the person
	// answering (Claude Code's permission_suggestions: rules to add, a
	// mode to switch to), as it sent them; empty for hookbus' own runs.
	Suggestions json.RawMessage `json:"suggestions,omitempty"`
}

// Answers to an approval (ApprovalResolved.Action).
const (
	// ActionApprove runs the call with the arguments as requested.
	ActionApprove = "approve"
	// ActionReject ends the run: run.completed with reason rejected.
	ActionReject = "reject"
	// ActionRejectAndContinue gives the reason to the model as the call's
	// result, and the run goes on.
	ActionRejectAndContinue = "reject_and_continue"
)

// ValidAction reports whether a is an answer to an approval.
func ValidAction(a string) bool {
	return a == ActionApprove || a == ActionReject || a == ActionRejectAndContinue
}

// ApprovalResolved is the data of approval.resolved: the answer to one
// call's approval, by a person (through any client) or by the expiry. The
// client that answers records it (docs/PROTOCOL.md, "Approvals"): a
// person's answer on the subject of the NATS user that wrote it
// (Subjects.ApprovalResolved), an expiry on the plain subject.
type ApprovalResolved struct {
	// CallID is the id of the call answered.
	CallID string `json:"call_id"`
	// Approved is true for approve.
	Approved bool `json:"approved"`
	// Action is approve, reject or reject_and_continue.
	Action string `json:"action,omitempty"`
	// By names who answered, for people to read: the authenticated
	// identity (Actor.Identity; "hookbus" for an expiry). In records
	// written before identities were recorded, a name the answerer typed.
	By string `json:"by,omitempty"`
	// Actor is who answered, as authenticated, the channel, the writer
	// and any self-declared name (a note).
	Actor
	// Reason is why (a reject's reason goes to the model with
	// reject_and_continue).
	Reason string `json:"reason,omitempty"`
	// Comment is the answerer's note.
	Comment string `json:"comment,omitempty"`
	// AnswerID identifies the answer (a ULID), so the client that gave it
	// can find it recorded.
	AnswerID string `json:"answer_id,omitempty"`
	// AnsweredAt is when the answer was given.
	AnsweredAt time.Time `json:"answered_at,omitempty"`
	// Expired is set when nobody answered in time and the request resolved
	// by its OnExpiry.
	Expired bool `json:"expired,omitempty"`
	// Arguments, on an approve, are the call's arguments as the approver
	// edited them (a JSON object): the call runs with them instead of the
	// requested ones. Empty: the call runs as requested.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// CompactBefore is the data of compact.before: the run's conversation
// passed its context budget and is about to be compacted.
type CompactBefore struct {
	// Messages and Tokens are the conversation's size (tokens: the
	// model's reported usage, or an estimate).
	Messages int `json:"messages"`
	Tokens   int `json:"tokens,omitempty"`
	// Budget is the context budget it passed.
	Budget int `json:"budget,omitempty"`
	// Manual is set for a compaction asked for (loop compact), not forced
	// by the budget.
	Manual bool `json:"manual,omitempty"`
}

// CompactAfter is the data of compact.after: the older part of the
// conversation was replaced by a summary.
type CompactAfter struct {
	// MessagesBefore counts the conversation's messages before the compaction.
	MessagesBefore int `json:"messages_before"`
	// MessagesAfter counts them after it.
	MessagesAfter int `json:"messages_after"`
	// Summary is the model's summary of the older messages.
	Summary string `json:"summary,omitempty"`
	// Messages is the whole conversation after the compaction (the summary
	// first, then the messages kept): a session rebuild starts from it.
	Messages []Message `json:"messages,omitempty"`
	// ReadFrom is the stream sequence of the compacting run's first
	// run.started: a reader rebuilding the session may start there, as
	// nothing before it shapes the conversation any more.
	ReadFrom uint64 `json:"read_from,omitempty"`
	// Usage is what the summary cost.
	Usage Usage `json:"usage"`
}

// CompactFailed is the data of compact.failed: the summary could not be
// made; the run goes on uncompacted (or fails, if its agent says so).
type CompactFailed struct {
	// Error says why the summary failed.
	Error string `json:"error"`
}

// SubagentBefore is the data of subagent.before, on the parent run: an
// agent is about to call another. Interceptors may modify the instruction
// or deny the call.
type SubagentBefore struct {
	// AgentID is the called agent's id.
	AgentID string `json:"agent_id"`
	// Instruction is the task given to the child run (its prompt).
	Instruction string `json:"instruction"`
	// Description is the caller's short description of the task.
	Description string `json:"description,omitempty"`
	// CallID is the tool call (Task) that asked for the sub-agent.
	CallID string `json:"call_id,omitempty"`
	// SessionID and RunID are the child run's, fixed before it starts so
	// that a resumed parent resumes the same child.
	SessionID string `json:"session_id,omitempty"`
	RunID     string `json:"run_id,omitempty"`
	// Depth is the child's depth (1 for a child of a top-level run).
	Depth int `json:"depth,omitempty"`
}

// SubagentAfter is the data of subagent.after, on the parent run: the
// child run ended.
type SubagentAfter struct {
	// AgentID is the called agent's id.
	AgentID   string `json:"agent_id"`
	SessionID string `json:"session_id,omitempty"`
	RunID     string `json:"run_id,omitempty"`
	// Answer is the child run's answer: the Task call's result.
	Answer string `json:"answer,omitempty"`
	// Success is set when the child ended done; Reason is how it ended.
	Success bool   `json:"success"`
	Reason  string `json:"reason,omitempty"`
	CallID  string `json:"call_id,omitempty"`
	// Usage is what the child used (it counts toward the parent's
	// budgets).
	Usage Usage `json:"usage"`
}

// SubagentFailed is the data of subagent.failed, on the parent run: the
// child could not be called, or failed.
type SubagentFailed struct {
	// AgentID is the called agent's id.
	AgentID string `json:"agent_id"`
	// Error says why the call failed.
	Error  string `json:"error"`
	CallID string `json:"call_id,omitempty"`
	RunID  string `json:"run_id,omitempty"`
}

// StepCompleted is the data of step.completed.
type StepCompleted struct {
	// Step is the step that ended.
	Step int `json:"step"`
	// ToolCalls counts the tool calls of the step.
	ToolCalls int `json:"tool_calls"`
	// Usage is what the step's model calls used.
	Usage Usage `json:"usage"`
}

// Stop is the data of stop: the loop is about to end the run. An interceptor
// may answer continue with a message that forces another step.
type Stop struct {
	// Reason is how the run is about to end (a run.completed reason).
	Reason string `json:"reason"`
	// Answer is the model's final answer.
	Answer string `json:"answer,omitempty"`
	// Continues counts how many times hooks already forced the run on.
	Continues int `json:"continues,omitempty"`
	// Continue is set when a hook forced the run on: the message given to
	// the model as a user message before the next step.
	Continue string `json:"continue,omitempty"`
	// Plugin names the hook that forced the run on.
	Plugin string `json:"plugin,omitempty"`
}

// Reasons a run ends (RunCompleted.Reason).
const (
	ReasonDone        = "done"
	ReasonDenied      = "denied"
	ReasonStopped     = "stopped"
	ReasonRejected    = "rejected"
	ReasonMaxSteps    = "max_steps"
	ReasonCostLimit   = "cost_limit"
	ReasonInterrupted = "interrupted"
	// ReasonIdle ends a coding agent's run whose session was silent for
	// longer than the idle time of the process that closed it (its hooks
	// missed the session's end).
	ReasonIdle = "idle"
)

// RunCompleted is the data of run.completed, the terminal event of a run
// that ended without an error.
type RunCompleted struct {
	// Reason is how the run ended: done, denied, stopped, rejected, max_steps,
	// cost_limit or interrupted.
	Reason string `json:"reason"`
	// Answer is the model's final answer.
	Answer string `json:"answer,omitempty"`
	// Detail says why, for reasons other than done (the deny reason, ...).
	Detail string `json:"detail,omitempty"`
	// Steps counts the run's steps.
	Steps int `json:"steps"`
	// Usage is what the run used, its sub-agents' runs included.
	Usage Usage `json:"usage"`
	// Events counts the run's events before this one.
	Events int `json:"events"`
}

// RunFailed is the data of run.failed: an error ended the run.
type RunFailed struct {
	// Error says what ended the run.
	Error string `json:"error"`
	// Steps counts the steps the run took.
	Steps int `json:"steps"`
	// Lost lists the run's seqs that were never stored (an append lost in
	// a fault) when nothing could fill them any more (another run holds
	// the session): this end closes the run over them, and verification
	// reports them as lost, not removed.
	Lost []uint64 `json:"lost,omitempty"`
}

// HarnessEvent is the data of harness.event: a hook event of a coding
// agent's own loop (a harness: Claude Code, Gemini CLI, Codex CLI) that no
// stage stands for, recorded as the harness sent it (Claude Code's
// ConfigChange, Gemini CLI's AfterModel, ...). Nothing intercepts it.
type HarnessEvent struct {
	// Harness names the coding agent: claude, gemini or codex.
	Harness string `json:"harness"`
	// Event is the harness's name of the hook event (its
	// hook_event_name).
	Event string `json:"event"`
	// Input is the hook input as the harness sent it (a JSON object).
	Input json.RawMessage `json:"input,omitempty"`
	// AfterEnd is set on an event recorded after its run's end: the
	// harness's session ended (SessionEnd) after its last turn had.
	AfterEnd bool `json:"after_end,omitempty"`
}

// HookDecided is the data of hook.decided: one interceptor's decision.
type HookDecided struct {
	// Plugin is the interceptor that decided.
	Plugin string `json:"plugin"`
	// Stage is the stage it decided on.
	Stage Stage `json:"stage"`
	// Decision is what it decided (allow, modify, deny, mock, stop, ask,
	// continue).
	Decision string `json:"decision"`
	// Reason is the reason it gave.
	Reason string `json:"reason,omitempty"`
	// LatencyUS is how long the call took, in microseconds.
	LatencyUS int64 `json:"latency_us"`
	// Remote is set for an interceptor called over NATS.
	Remote bool `json:"remote,omitempty"`
	// Patch is what it changed, as an RFC 6902 patch of the payload: the patch
	// it sent, or the difference its replacement made.
	Patch json.RawMessage `json:"patch,omitempty"`
	// Warnings are the warnings it gave.
	Warnings []string `json:"warnings,omitempty"`
	// Annotations are the annotations it gave.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Context is the text this interceptor added for the model (context on
	// tool.after, the message of a continue on stop).
	Context string `json:"context,omitempty"`
	// EventID is the CloudEvent id of the event decided on, as it is
	// stored (not the id of the interception request).
	EventID string `json:"event_id,omitempty"`
	// Result is the tool result a mock decision gave (on tool.before).
	Result *ToolResult `json:"result,omitempty"`
	// Shadow marks the decision of a shadow registration: recorded, never
	// applied (docs/PROTOCOL.md, "Shadow mode"). Readers that rebuild runs
	// ignore it.
	Shadow bool `json:"shadow,omitempty"`
	// Policy is set when the decision is a policy's (docs/POLICIES.md):
	// which policy, version and rule, and what it saw.
	Policy *PolicyHit `json:"policy,omitempty"`
}

// Failure kinds of hook.failed.
const (
	FailTimeout      = "timeout"
	FailNoResponders = "no_responders"
	FailBadReply     = "bad_reply"
	FailError        = "error"
	FailPanic        = "panic"
)

// HookFailed is the data of hook.failed: an interceptor timed out, errored,
// panicked, had no responders or replied garbage.
type HookFailed struct {
	// Plugin is the interceptor that failed.
	Plugin string `json:"plugin"`
	// Stage is the stage it was called on.
	Stage Stage `json:"stage"`
	// Kind is how it failed: timeout, no_responders, bad_reply, error or
	// panic.
	Kind string `json:"kind"`
	// Error says what went wrong.
	Error string `json:"error"`
	// Policy is the registration's failure policy: ignore or fail.
	Policy string `json:"policy"`
	// Outcome is "failed_open" (the chain went on) or "failed_closed" (the
	// event was denied).
	Outcome string `json:"outcome"`
	// LatencyUS is how long the call took, in microseconds.
	LatencyUS int64 `json:"latency_us"`
	// EventID is the CloudEvent id of the event it was called on, as stored.
	EventID string `json:"event_id,omitempty"`
}

// PayloadFor returns a pointer to a new zero payload of the stage's type, or
// ErrUnknownStage.
func PayloadFor(s Stage) (any, error) {
	info, ok := s.info()
	if !ok {
		return nil, ErrUnknownStage
	}
	return info.payload(), nil
}
