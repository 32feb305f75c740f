package audit

import (
	"encoding/json"
	"time"

	"github.com/hookbus/hookbus/events"
)

// RunTree is one run as a readable tree: its summary, its items in the
// order of the run (ce-seq), and the sub-agent runs it called nested in
// the items that called them.
type RunTree struct {
	Run   RunSummary `json:"run"`
	Items []*Item    `json:"items"`
	// Children are child runs not reached through one of the items (a
	// child whose subagent.before is not recorded).
	Children []*RunTree `json:"children,omitempty"`
}

// ItemKind says what an Item is.
type ItemKind string

// The kinds of items. The events of a step, a tool call, an approval, a
// compaction or a sub-agent call make one item, of its stage group's name
// (events.Group); the run's and the model's events are items each.
const (
	KindIntake      ItemKind = "intake"                         // intake: the request and its hooks
	KindStart       ItemKind = "start"                          // run.started: an attempt (resumed: a later one)
	KindStep        ItemKind = ItemKind(events.GroupStep)       // step.started to step.completed; Items holds the step's
	KindContext     ItemKind = "context"                        // context.assembled
	KindModel       ItemKind = "model"                          // model.responded
	KindModelFailed ItemKind = "model_failed"                   // model.failed
	KindTool        ItemKind = ItemKind(events.GroupTool)       // a tool call: tool.before, tool.result, tool.after, tool.failed; Items holds its approval and sub-agent
	KindApproval    ItemKind = ItemKind(events.GroupApproval)   // approval.requested and its approval.resolved
	KindSubagent    ItemKind = ItemKind(events.GroupSubagent)   // subagent.before and .after or .failed; Child is the child run
	KindCompaction  ItemKind = ItemKind(events.GroupCompaction) // compact.before and .after or .failed
	KindStop        ItemKind = "stop"                           // stop
	KindEnd         ItemKind = "end"                            // run.completed or run.failed
	KindHook        ItemKind = ItemKind(events.GroupHook)       // an interceptor's record whose event is not recorded
	KindEvent       ItemKind = "event"                          // any other event
)

// Item is one node of a RunTree.
type Item struct {
	Kind ItemKind `json:"kind"`
	// Stage is the stage of the item's first event; Seq, Step and Time
	// are that event's.
	Stage events.Stage `json:"stage"`
	Seq   uint64       `json:"seq"`
	Step  int          `json:"step,omitempty"`
	Time  time.Time    `json:"time"`
	// Text is a one-line account of the item.
	Text string `json:"text"`
	// Hooks are the interceptors' decisions and failures on the item's
	// events, in the order they were recorded.
	Hooks []*HookCall `json:"hooks,omitempty"`
	// Items are the nested items: a step's, a tool call's approval and
	// sub-agent.
	Items []*Item `json:"items,omitempty"`
	// Tool is set on a tool item, Approval on an approval item, Subagent
	// on a sub-agent item, Model on a model item.
	Tool     *ToolItem     `json:"tool,omitempty"`
	Approval *ApprovalItem `json:"approval,omitempty"`
	Subagent *SubagentItem `json:"subagent,omitempty"`
	Model    *ModelItem    `json:"model,omitempty"`
	// Child is the run a sub-agent item called.
	Child *RunTree `json:"child,omitempty"`
}

// ModelItem is one model reply.
type ModelItem struct {
	Content   string            `json:"content,omitempty"`
	ToolCalls []events.ToolCall `json:"tool_calls,omitempty"`
	Usage     events.Usage      `json:"usage"`
	Model     string            `json:"model,omitempty"`
}

// ToolItem is one tool call and what came of it.
type ToolItem struct {
	// Call is the call as it ran (after the tool.before hooks).
	Call events.ToolCall `json:"call"`
	// Result is the result the model was given (after the tool.after
	// hooks); RawResult is the tool's own, when recorded before tool.after
	// hooks ran.
	Result    *events.ToolResult `json:"result,omitempty"`
	RawResult *events.ToolResult `json:"raw_result,omitempty"`
	// Context is the extra text tool.after hooks gave the model.
	Context string `json:"context,omitempty"`
	// Error is set when the tool failed (tool.failed); Panicked and
	// Unknown say how.
	Error    string `json:"error,omitempty"`
	Panicked bool   `json:"panicked,omitempty"`
	Unknown  bool   `json:"unknown,omitempty"`
}

// ApprovalItem is a call that waited for a human.
type ApprovalItem struct {
	Requested events.ApprovalRequested `json:"requested"`
	// Resolved is the answer (the first recorded); nil while the call
	// waits.
	Resolved *events.ApprovalResolved `json:"resolved,omitempty"`
	// IdentityProblem says how the answer's record does not bind who it
	// names to the NATS user that wrote it (events.Actor.CheckWriter).
	IdentityProblem string `json:"identity_problem,omitempty"`
	// Ignored counts the answers recorded after the first (never acted
	// on).
	Ignored int `json:"ignored,omitempty"`
}

// SubagentItem is a call of another agent.
type SubagentItem struct {
	Before events.SubagentBefore  `json:"before"`
	After  *events.SubagentAfter  `json:"after,omitempty"`
	Failed *events.SubagentFailed `json:"failed,omitempty"`
}

// HookCall is one interceptor's decision (hook.decided) or failure
// (hook.failed) on an event.
type HookCall struct {
	Plugin string       `json:"plugin"`
	Stage  events.Stage `json:"stage"`
	// Decision is the decision (allow, modify, deny, mock, ask, stop,
	// continue), "failed" for a failure.
	Decision  string `json:"decision"`
	Reason    string `json:"reason,omitempty"`
	LatencyUS int64  `json:"latency_us"`
	Remote    bool   `json:"remote,omitempty"`
	// Shadow marks a shadow decision: recorded, never applied (a shadow
	// registration, a policy in audit mode or outside its rollout).
	Shadow bool `json:"shadow,omitempty"`
	// Patch is the RFC 6902 patch the decision applied; Changes is the
	// same as a diff of the payload.
	Patch       json.RawMessage   `json:"patch,omitempty"`
	Changes     []Change          `json:"changes,omitempty"`
	Warnings    []string          `json:"warnings,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Result is a mock's tool result.
	Result *events.ToolResult `json:"result,omitempty"`
	// Failure is set for a hook.failed.
	Failure *HookFailure `json:"failure,omitempty"`
	// Policy is set for a policy's decision: its name, version, the rule
	// that decided, its mode, the expression and the values it saw.
	Policy *events.PolicyHit `json:"policy,omitempty"`
	Seq    uint64            `json:"seq"`
	Time   time.Time         `json:"time"`
}

// HookFailure is how an interceptor call failed.
type HookFailure struct {
	// Kind is timeout, no_responders, bad_reply, error or panic.
	Kind  string `json:"kind"`
	Error string `json:"error"`
	// Policy is the registration's failure policy (ignore, fail);
	// Outcome is failed_open or failed_closed.
	Policy  string `json:"policy"`
	Outcome string `json:"outcome"`
}

// Change is one operation of a patch as a change of the payload: the
// value at Path before and after. Before is known when the stream records
// the payload the hook was given (a tool call as the model asked for it,
// a tool's raw result); BeforeKnown says so. A remove has no After.
type Change struct {
	Op          string          `json:"op"`
	Path        string          `json:"path"`
	From        string          `json:"from,omitempty"`
	Before      json.RawMessage `json:"before,omitempty"`
	BeforeKnown bool            `json:"before_known"`
	After       json.RawMessage `json:"after,omitempty"`
}
