package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/mcptool"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type scanArgs struct {
	FilePath string `json:"file_path"`
	Session  string `json:"session"`
}

// servers starts an MCP server over HTTP with a scan tool (it denies files
// under secrets/ in Claude Code's output format) and a broken one, and
// connects to it as an agent's server named sec.
func servers(t *testing.T) mcp.Servers {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "sec", Version: "v0.0.1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "scan"}, func(_ context.Context, _ *sdk.CallToolRequest, in scanArgs) (*sdk.CallToolResult, any, error) {
		out := ""
		if strings.Contains(in.FilePath, "secrets/") {
			out = `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"scan of ` + in.FilePath + ` (session ` + in.Session + `): secret"}}`
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "broken"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return nil, nil, errors.New("scanner offline")
	})
	web := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(web.Close)
	ss, err := mcp.ConnectAll(context.Background(), []mcp.ServerConfig{{Name: "sec", URL: web.URL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	return ss
}

func write(t *testing.T, path string) *events.Event {
	t.Helper()
	e, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s1", RunID: "r", Subject: "Write"},
		events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "Write", Arguments: json.RawMessage(`{"file_path":"` + path + `","content":"x"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// An mcp_tool hook calls its tool with the input's placeholders filled
// from the hook's input, and reads the tool's text as a command hook's
// stdout: here a deny in Claude Code's output format.
func TestMCPToolHook(t *testing.T) {
	ss := servers(t)
	hook, err := mcptool.New(mcptool.Config{Servers: ss}, claudecode.PreToolUse,
		json.RawMessage(`{"type": "mcp_tool", "server": "sec", "tool": "scan", "input": {"file_path": "${tool_input.file_path}", "session": "${session_id}"}, "timeout": 10}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := hook.Intercept(ctx, &interceptors.Request{Stage: events.StageToolBefore, Event: write(t, "/w/secrets/key")})
	if err != nil || d.Kind != interceptors.Deny || d.Reason != "scan of /w/secrets/key (session s1): secret" {
		t.Fatalf("secret: %+v, %v", d, err)
	}
	d, err = hook.Intercept(ctx, &interceptors.Request{Stage: events.StageToolBefore, Event: write(t, "/w/readme")})
	if err != nil || d != nil && d.Kind != interceptors.Allow {
		t.Fatalf("readme: %+v, %v", d, err)
	}
	// A tool that fails is a non-blocking error.
	broken, err := mcptool.New(mcptool.Config{Servers: ss}, claudecode.PreToolUse, json.RawMessage(`{"type": "mcp_tool", "server": "sec", "tool": "broken"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := broken.Intercept(ctx, &interceptors.Request{Stage: events.StageToolBefore, Event: write(t, "/w/x")}); !errors.Is(err, mcptool.ErrToolFailed) {
		t.Fatalf("broken: %v", err)
	}
}

// Handlers hookbus cannot run are refused, naming what is wrong.
func TestBadHandlers(t *testing.T) {
	ss := servers(t)
	for raw, want := range map[string]string{
		`{"type": "mcp_tool", "server": "other", "tool": "scan"}`:            `server "other" is not one of the agent's MCP servers`,
		`{"type": "mcp_tool", "server": "sec"}`:                              "names its server and tool",
		`{"type": "mcp_tool", "server": "sec", "tool": "scan", "if": "x"}`:   `unknown field "if"`,
		`{"type": "mcp_tool", "server": "sec", "tool": "scan", "input": []}`: "input is not a JSON object",
	} {
		if _, err := mcptool.New(mcptool.Config{Servers: ss}, claudecode.PreToolUse, json.RawMessage(raw)); !errors.Is(err, mcptool.ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}

// Placeholders: a whole-string one keeps the value's type; within text, a
// value is written as text; a missing path is empty.
func TestFill(t *testing.T) {
	in := &claudecode.Input{SessionID: "s1", HookEventName: claudecode.PreToolUse, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"ls","n":3}`)}
	got, err := mcptool.Fill(json.RawMessage(`{"all": "${tool_input}", "cmd": "run ${tool_input.command} x${tool_input.n}", "none": "${nope.x}", "list": ["${tool_name}"]}`), in)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(got, &m)
	if all, _ := m["all"].(map[string]any); all["command"] != "ls" || m["cmd"] != "run ls x3" || m["none"] != "" || m["list"].([]any)[0] != "Bash" {
		t.Fatalf("filled %s", got)
	}
}
