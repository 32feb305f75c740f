package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// emptySchema is the parameters of a tool that declares none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// params builds the request body. An error wraps ErrRequest.
func (m *Model) params(req *loop.ModelRequest) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(m.cfg.Model)}
	for i, msg := range req.Messages {
		mp, err := message(msg)
		if err != nil {
			return p, fmt.Errorf("%w: message %d: %v", ErrRequest, i+1, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, t := range req.Tools {
		tp, err := tool(t)
		if err != nil {
			return p, fmt.Errorf("%w: tool %q: %v", ErrRequest, t.Name, err)
		}
		p.Tools = append(p.Tools, tp)
	}
	if m.cfg.MaxTokens > 0 {
		if m.cfg.LegacyMaxTokens {
			p.MaxTokens = sdk.Int(int64(m.cfg.MaxTokens))
		} else {
			p.MaxCompletionTokens = sdk.Int(int64(m.cfg.MaxTokens))
		}
	}
	if m.cfg.Temperature != nil {
		p.Temperature = sdk.Float(*m.cfg.Temperature)
	}
	return p, nil
}

// message maps one conversation message.
func message(msg events.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case events.RoleSystem:
		return sdk.SystemMessage(msg.Content), nil
	case events.RoleUser:
		return sdk.UserMessage(msg.Content), nil
	case events.RoleTool:
		if msg.ToolCallID == "" {
			return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool message has no tool_call_id")
		}
		return sdk.ToolMessage(msg.Content, msg.ToolCallID), nil
	case events.RoleAssistant:
		var a sdk.ChatCompletionAssistantMessageParam
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = param.NewOpt(msg.Content)
		}
		for _, c := range msg.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       c.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: argumentsText(c.Arguments)},
				},
			})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	default:
		return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// argumentsText is the arguments string sent back for a call: the JSON as
// it is, the raw text of arguments that arrived invalid (held as a JSON
// string), "{}" for none.
func argumentsText(args json.RawMessage) string {
	a := bytes.TrimSpace(args)
	if len(a) == 0 {
		return "{}"
	}
	if a[0] == '"' {
		var raw string
		if json.Unmarshal(a, &raw) == nil {
			return raw
		}
	}
	return string(a)
}

// tool maps a tool spec to a function tool; Idempotent is not sent.
func tool(t events.ToolSpec) (sdk.ChatCompletionToolUnionParam, error) {
	schema := bytes.TrimSpace(t.Parameters)
	if len(schema) == 0 || bytes.Equal(schema, []byte("null")) {
		schema = emptySchema
	}
	if schema[0] != '{' || !json.Valid(schema) {
		return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("parameters are not a JSON object")
	}
	def, err := json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}{t.Name, t.Description, schema})
	if err != nil {
		return sdk.ChatCompletionToolUnionParam{}, err
	}
	// The definition goes out as built, so the schema reaches the server
	// byte for byte.
	return sdk.ChatCompletionFunctionTool(param.Override[shared.FunctionDefinitionParam](json.RawMessage(def))), nil
}
