package openai

import (
	"bytes"
	"encoding/json"

	sdk "github.com/openai/openai-go/v3"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// response maps the first choice of a completion.
func response(c *sdk.ChatCompletion) *loop.ModelResponse {
	ch := c.Choices[0]
	msg := events.Message{Role: events.RoleAssistant, Content: ch.Message.Content}
	if msg.Content == "" && ch.Message.Refusal != "" {
		msg.Content = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		call := events.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: arguments(tc.Function.Arguments)}
		if tc.Type == "custom" {
			call.Name, call.Arguments = tc.Custom.Name, stringJSON(tc.Custom.Input)
		}
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	return &loop.ModelResponse{
		Message:      msg,
		Usage:        events.Usage{InputTokens: int(c.Usage.PromptTokens), OutputTokens: int(c.Usage.CompletionTokens)},
		FinishReason: ch.FinishReason,
		Model:        c.Model,
		Provider:     "openai",
	}
}

// arguments turns a call's arguments string into JSON: the JSON itself when
// it is valid, {} when it is empty, else the raw text as a JSON string, so
// the engine sees arguments that are not an object and tells the model.
func arguments(s string) json.RawMessage {
	t := bytes.TrimSpace([]byte(s))
	switch {
	case len(t) == 0:
		return json.RawMessage(`{}`)
	case json.Valid(t):
		var b bytes.Buffer
		_ = json.Compact(&b, t)
		return b.Bytes()
	default:
		return stringJSON(s)
	}
}

func stringJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
