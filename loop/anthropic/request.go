package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// emptySchema is the input schema of a tool that declares no parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// params builds the request body. An error wraps ErrRequest.
func (m *Model) params(req *loop.ModelRequest) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(m.cfg.Model), MaxTokens: int64(m.cfg.MaxTokens)}
	for i, msg := range req.Messages {
		if msg.Role == events.RoleSystem {
			if msg.Content != "" {
				p.System = append(p.System, sdk.TextBlockParam{Text: msg.Content})
			}
			continue
		}
		role, blocks, err := content(msg)
		if err != nil {
			return p, fmt.Errorf("%w: message %d: %v", ErrRequest, i+1, err)
		}
		if len(blocks) == 0 {
			continue // the API refuses empty content
		}
		// Consecutive messages of one role are one message: tool results
		// (and a user message after them) answer the assistant's tool_use
		// blocks together.
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
			continue
		}
		p.Messages = append(p.Messages, sdk.MessageParam{Role: role, Content: blocks})
	}
	for _, t := range req.Tools {
		tp, err := tool(t)
		if err != nil {
			return p, fmt.Errorf("%w: tool %q: %v", ErrRequest, t.Name, err)
		}
		p.Tools = append(p.Tools, tp)
	}
	if m.cfg.Temperature != nil {
		p.Temperature = sdk.Float(*m.cfg.Temperature)
	}
	return p, nil
}

// content maps a user, assistant or tool message to its role and blocks.
func content(msg events.Message) (sdk.MessageParamRole, []sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	switch msg.Role {
	case events.RoleUser:
		if msg.Content != "" {
			blocks = append(blocks, sdk.NewTextBlock(msg.Content))
		}
		return sdk.MessageParamRoleUser, blocks, nil
	case events.RoleAssistant:
		if msg.Content != "" {
			blocks = append(blocks, sdk.NewTextBlock(msg.Content))
		}
		for _, c := range msg.ToolCalls {
			blocks = append(blocks, sdk.NewToolUseBlock(c.ID, input(c.Arguments), c.Name))
		}
		return sdk.MessageParamRoleAssistant, blocks, nil
	case events.RoleTool:
		if msg.ToolCallID == "" {
			return "", nil, fmt.Errorf("tool message has no tool_call_id")
		}
		r := sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
		if msg.Content != "" {
			r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: msg.Content}}}
		}
		if isError(msg.Content) {
			r.IsError = param.NewOpt(true)
		}
		return sdk.MessageParamRoleUser, []sdk.ContentBlockParamUnion{{OfToolResult: &r}}, nil
	default:
		return "", nil, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// isError says whether a tool result reports a failure: the engine writes a
// tool's error as "error: ..." and a denied call as "denied: ...".
func isError(content string) bool {
	return strings.HasPrefix(content, "error:") || strings.HasPrefix(content, "denied:")
}

// input is a tool call's arguments as a tool_use input, which must be an
// object: arguments that are not one (the raw text of invalid arguments
// from another provider) are sent as {}.
func input(args json.RawMessage) json.RawMessage {
	a := bytes.TrimSpace(args)
	if len(a) == 0 || a[0] != '{' || !json.Valid(a) {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(a)
}

// tool maps a tool spec; Idempotent is not sent.
func tool(t events.ToolSpec) (sdk.ToolUnionParam, error) {
	schema := bytes.TrimSpace(t.Parameters)
	if len(schema) == 0 || bytes.Equal(schema, []byte("null")) {
		schema = emptySchema
	}
	if schema[0] != '{' || !json.Valid(schema) {
		return sdk.ToolUnionParam{}, fmt.Errorf("parameters are not a JSON object")
	}
	tp := sdk.ToolParam{
		Name: t.Name,
		// The schema goes out as given, byte for byte.
		InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(schema)),
	}
	if t.Description != "" {
		tp.Description = param.NewOpt(t.Description)
	}
	return sdk.ToolUnionParam{OfTool: &tp}, nil
}
