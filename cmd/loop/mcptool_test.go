package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An agent's settings hook of type mcp_tool calls a tool of one of the
// agent's MCP servers with the hook's input, and its answer decides: here
// the server's guard denies the rm -rf, which does not run.
func TestMCPToolHookOnAgent(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "sec", Version: "v0.0.1"}, nil)
	type args struct {
		Command string `json:"command"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "guard"}, func(_ context.Context, _ *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
		out := ""
		if strings.Contains(in.Command, "rm -rf") {
			out = `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "the MCP guard refuses ` + in.Command + `"}}`
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out}}}, nil, nil
	})
	web := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(web.Close)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"script.json": rmScript, "victim/keep": "x", "agents.yaml": `agents:
  - id: guarded
    model: scripted:script.json
    tools: [Bash]
    mcp:
      - {name: sec, url: "` + web.URL + `"}
    hooks:
      PreToolUse:
        - matcher: Bash
          hooks: [{type: mcp_tool, server: sec, tool: guard, input: {command: "${tool_input.command}"}}]
`})
	code, stdout, stderr := loopRun(t, "run", "--store", filepath.Join(dir, "store"), "--listen", "none", "--root", dir,
		"--agents", filepath.Join(dir, "agents.yaml"), "--agent", "guarded", "tidy up")
	if code != exitOK || !strings.Contains(stdout, "the MCP guard refuses rm -rf victim") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "victim", "keep")); err != nil {
		t.Fatalf("rm -rf ran: %v", err)
	}
}
