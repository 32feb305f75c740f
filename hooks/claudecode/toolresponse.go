package claudecode

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// ToolResponse is a hookbus tool result as Claude Code's tool_response of
// the same tool, so that hook scripts reading it carry over:
//
//	Bash            {"stdout": content, "stderr": "", "interrupted": false, "isImage": false}
//	Read            {"type": "text", "file": {"filePath": ..., "content": content}}
//	Write           {"type": "create", "filePath": ..., "content": ...}
//	Edit            {"filePath", "oldString", "newString", "replaceAll"}: the call's arguments
//	mcp__*          [{"type": "text", "text": content}]
//	any other tool  the content, a JSON string
//
// hookbus' Bash tool returns stdout and stderr interleaved in one text, so
// all of it is stdout. A result that is an error is the content as a JSON
// string whatever the tool.
func ToolResponse(call events.ToolCall, r events.ToolResult) json.RawMessage {
	var v any = r.Content
	args := map[string]any{}
	_ = json.Unmarshal(call.Arguments, &args) // absent or malformed: no fields
	str := func(k string) string { s, _ := args[k].(string); return s }
	switch {
	case r.IsError:
	case call.Name == "Bash":
		v = map[string]any{"stdout": r.Content, "stderr": "", "interrupted": false, "isImage": false}
	case call.Name == "Read":
		v = map[string]any{"type": "text", "file": map[string]any{"filePath": str("file_path"), "content": r.Content}}
	case call.Name == "Write":
		v = map[string]any{"type": "create", "filePath": str("file_path"), "content": str("content")}
		if strings.Contains(r.Content, "has been updated") {
			v.(map[string]any)["type"] = "update"
		}
	case call.Name == "Edit":
		all, _ := args["replace_all"].(bool)
		v = map[string]any{"filePath": str("file_path"), "oldString": str("old_string"), "newString": str("new_string"), "replaceAll": all}
	case strings.HasPrefix(call.Name, "mcp__"):
		v = []map[string]string{{"type": "text", "text": r.Content}}
	}
	b, _ := json.Marshal(v) // maps of strings and bools always marshal
	return b
}

// ResultContent is the text of a Claude Code tool_response (or a hook's
// updatedToolOutput), the reverse of ToolResponse: a JSON string is its
// text; Bash's object its stdout, then its stderr; Read's its file content;
// a list of MCP content blocks their texts, one per line; anything else its
// JSON.
func ResultContent(resp json.RawMessage) string {
	resp = bytes.TrimSpace(resp)
	if len(resp) == 0 || string(resp) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(resp, &s) == nil {
		return s
	}
	var obj struct {
		Stdout *string `json:"stdout"`
		Stderr string  `json:"stderr"`
		File   *struct {
			Content string `json:"content"`
		} `json:"file"`
	}
	if json.Unmarshal(resp, &obj) == nil {
		switch {
		case obj.Stdout != nil:
			out := *obj.Stdout
			if obj.Stderr != "" {
				if out != "" && !strings.HasSuffix(out, "\n") {
					out += "\n"
				}
				out += obj.Stderr
			}
			return out
		case obj.File != nil:
			return obj.File.Content
		}
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(resp, &blocks) == nil && len(blocks) > 0 {
		texts := make([]string, 0, len(blocks))
		for _, b := range blocks {
			if b.Type == "text" {
				texts = append(texts, b.Text)
			}
		}
		if len(texts) == len(blocks) {
			return strings.Join(texts, "\n")
		}
	}
	return string(resp)
}
