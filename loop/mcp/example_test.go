package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/hookbus/hookbus/loop/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A streamable HTTP MCP server (built here with the SDK) and its tool as
// an agent sees it.
func Example() {
	ctx := context.Background()
	greeter := sdk.NewServer(&sdk.Implementation{Name: "greeter"}, nil)
	type args struct {
		Name string `json:"name"`
	}
	sdk.AddTool(greeter, &sdk.Tool{Name: "greet", Description: "Says hello.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	web := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return greeter }, nil))
	defer web.Close()

	s, err := mcp.Connect(ctx, mcp.ServerConfig{Name: "greeter", URL: web.URL})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	for _, tool := range s.Tools() {
		spec := tool.Spec()
		fmt.Printf("%s (idempotent %v): %s\n", spec.Name, spec.Idempotent, spec.Description)
		out, err := tool.Call(ctx, json.RawMessage(`{"name":"Ada"}`))
		fmt.Println(out, err)
	}
	// Output:
	// mcp__greeter__greet (idempotent true): Says hello.
	// Hello, Ada! <nil>
}
