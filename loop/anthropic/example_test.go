package anthropic_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/fakellm"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/anthropic"
)

// A model asked with a tool answers with a tool_use block, which becomes a
// tool call. The server here is fakellm replaying Anthropic's answers; leave
// BaseURL empty to reach Anthropic (or set ANTHROPIC_BASE_URL).
func Example() {
	srv := fakellm.New(fakellm.MustRecorded("anthropic/two_tool_steps"))
	defer srv.Close()

	model, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", BaseURL: srv.URL(), APIKey: "sk-ant-test"})
	if err != nil {
		panic(err)
	}
	resp, err := model.Generate(context.Background(), &loop.ModelRequest{
		Messages: []events.Message{
			{Role: events.RoleSystem, Content: "Be brief."},
			{Role: events.RoleUser, Content: "What time is it?"},
		},
		Tools: []events.ToolSpec{{Name: "clock", Description: "Tells the time."}},
	})
	if err != nil {
		panic(err)
	}
	call := resp.Message.ToolCalls[0]
	fmt.Println(resp.Message.Content)
	fmt.Println(resp.FinishReason, call.Name, string(call.Arguments), resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// I'll check the time first.
	// tool_calls clock {} 472 54
}

// An overloaded API (HTTP 529) is a retryable *loop.ModelError; the engine
// waits and asks again.
func Example_overloaded() {
	srv := fakellm.New(fakellm.MustRecorded("anthropic/overloaded_then_success"))
	defer srv.Close()

	model, _ := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", BaseURL: srv.URL(), APIKey: "sk-ant-test"})
	req := &loop.ModelRequest{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}}
	_, err := model.Generate(context.Background(), req)
	var me *loop.ModelError
	if errors.As(err, &me) {
		fmt.Println(me.Status, me.Type, me.Retryable)
	}
	resp, _ := model.Generate(context.Background(), req)
	fmt.Println(resp.Message.Content)
	// Output:
	// 529 overloaded_error true
	// Hello again.
}
