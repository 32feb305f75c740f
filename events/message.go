package events

import "encoding/json"

// Role is the author of a conversation message.
type Role string

// Message roles, as in the OpenAI chat format.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one conversation message.
type Message struct {
	// Role is who wrote the message: system, user, assistant or tool.
	Role Role `json:"role"`
	// Content is the message's text.
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message.
	Name string `json:"name,omitempty"`
}

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	// ID identifies the call within the run ("call_<step>_<n>"); the tool
	// message and result that answer it carry it.
	ID string `json:"id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Arguments are the model's arguments: a JSON object, or, when a model
	// wrote arguments that are not JSON, a JSON string holding its text.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Action is the call normalized (its kind and the fields rules read),
	// set on tool stages' payloads by whoever put the call on the bus;
	// absent on calls recorded before it existed and in model messages.
	Action *Action `json:"action,omitempty"`
}

// ToolResult is what a tool call produced (or what an interceptor put in its
// place).
type ToolResult struct {
	// CallID is the id of the call it answers.
	CallID string `json:"call_id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Content is the result as the model reads it.
	Content string `json:"content"`
	// IsError marks a result that reports a failure to the model (a denied
	// call, a tool error) rather than tool output.
	IsError bool `json:"is_error,omitempty"`
	// Mocked marks a result given by an interceptor; the tool did not run.
	Mocked bool `json:"mocked,omitempty"`
	// DurationMS is how long the tool ran, in milliseconds.
	DurationMS int64 `json:"duration_ms,omitempty"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	// Name is the tool's name, as the model calls it.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the tool's arguments.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Idempotent declares that running the tool twice with the same
	// arguments does no more than running it once. When a worker dies while
	// a tool runs (its outcome unknown), the resumed run runs an idempotent
	// tool again and reports any other to the model as "outcome unknown".
	// Model providers do not send it to the model.
	Idempotent bool `json:"idempotent,omitempty"`
}

// Usage counts model tokens, and their cost when the model's prices are
// known.
type Usage struct {
	// InputTokens counts the tokens the model read.
	InputTokens int `json:"input_tokens"`
	// OutputTokens counts the tokens the model wrote.
	OutputTokens int `json:"output_tokens"`
	// CostUSD is what the tokens cost, in US dollars (0: prices unknown).
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens, CostUSD: u.CostUSD + o.CostUSD}
}
