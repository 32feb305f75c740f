package telemetry

import (
	"encoding/json"

	"github.com/hookbus/hookbus/events"
)

// The conversation as the OpenTelemetry GenAI conventions record it on a
// span (gen_ai.input.messages, gen_ai.output.messages): messages of typed
// parts, serialised as JSON strings. Only built when
// TracesConfig.CaptureContent is on.

// genAIMessage is one message of gen_ai.input.messages or
// gen_ai.output.messages.
type genAIMessage struct {
	Role         string      `json:"role"`
	Parts        []genAIPart `json:"parts"`
	FinishReason string      `json:"finish_reason,omitempty"`
}

// genAIPart is one part of a message: text, a tool call, or a tool call's
// response.
type genAIPart struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  *string         `json:"response,omitempty"`
}

// genAIParts are m's parts: its text, its tool calls, or (a tool message)
// the response to one.
func genAIParts(m events.Message) []genAIPart {
	if m.Role == events.RoleTool {
		content := m.Content
		return []genAIPart{{Type: "tool_call_response", ID: m.ToolCallID, Response: &content}}
	}
	parts := []genAIPart{}
	if m.Content != "" {
		parts = append(parts, genAIPart{Type: "text", Content: m.Content})
	}
	for _, c := range m.ToolCalls {
		p := genAIPart{Type: "tool_call", ID: c.ID, Name: c.Name}
		if json.Valid(c.Arguments) {
			p.Arguments = c.Arguments
		}
		parts = append(parts, p)
	}
	return parts
}

// inputMessages is gen_ai.input.messages: the conversation the model was
// given, system messages included (they are part of the chat history).
func inputMessages(msgs []events.Message) string {
	out := make([]genAIMessage, len(msgs))
	for i, m := range msgs {
		out[i] = genAIMessage{Role: string(m.Role), Parts: genAIParts(m)}
	}
	return marshal(out)
}

// outputMessages is gen_ai.output.messages: the model's one reply, with
// why it stopped.
func outputMessages(p *events.ModelResponded) string {
	return marshal([]genAIMessage{{Role: string(events.RoleAssistant), Parts: genAIParts(p.Message), FinishReason: finishReason(p)}})
}

// finishReason maps a provider's finish reason to the conventions' values
// (stop, length, content_filter, tool_call, error); another one is kept
// as the provider said it.
func finishReason(p *events.ModelResponded) string {
	switch p.FinishReason {
	case "tool_calls", "tool_use", "tool_call":
		return "tool_call"
	case "end_turn", "stop_sequence", "":
		if p.FinishReason == "" && len(p.Message.ToolCalls) > 0 {
			return "tool_call"
		}
		return "stop"
	case "max_tokens":
		return "length"
	}
	return p.FinishReason
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil { // only plain types: cannot happen
		return ""
	}
	return string(b)
}
