package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// response maps a message: its text blocks joined, its tool_use blocks as
// tool calls; other blocks (thinking) are not part of the reply.
func response(m *sdk.Message) *loop.ModelResponse {
	msg := events.Message{Role: events.RoleAssistant}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			msg.ToolCalls = append(msg.ToolCalls, events.ToolCall{ID: b.ID, Name: b.Name, Arguments: compact(b.Input)})
		}
	}
	msg.Content = text.String()
	u := m.Usage
	return &loop.ModelResponse{
		Message: msg,
		Usage: events.Usage{
			InputTokens:  int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
			OutputTokens: int(u.OutputTokens),
		},
		FinishReason: finishReason(m.StopReason),
		Model:        string(m.Model),
		Provider:     "anthropic",
	}
}

// compact is a tool_use input as compact JSON, {} when absent.
func compact(in json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if len(bytes.TrimSpace(in)) == 0 || string(bytes.TrimSpace(in)) == "null" || json.Compact(&b, in) != nil {
		return json.RawMessage(`{}`)
	}
	return b.Bytes()
}

// finishReason maps a stop_reason to the OpenAI vocabulary the engine
// records; one without an equivalent (pause_turn) passes as it is.
func finishReason(r sdk.StopReason) string {
	switch r {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		return "stop"
	case sdk.StopReasonToolUse:
		return "tool_calls"
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return "length"
	case sdk.StopReasonRefusal:
		return "content_filter"
	default:
		return string(r)
	}
}
