package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/fakellm"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/openai"
)

// A model asked with a tool answers with a tool call. The server here is
// fakellm replaying OpenAI's answers; point BaseURL at OpenAI, vLLM or
// Ollama instead (or set OPENAI_BASE_URL).
func Example() {
	srv := fakellm.New(fakellm.MustRecorded("openai/two_tool_steps"))
	defer srv.Close()

	model, err := openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: srv.URL() + "/v1", APIKey: "sk-test"})
	if err != nil {
		panic(err)
	}
	resp, err := model.Generate(context.Background(), &loop.ModelRequest{
		Messages: []events.Message{{Role: events.RoleUser, Content: "What time is it?"}},
		Tools:    []events.ToolSpec{{Name: "clock", Description: "Tells the time."}},
	})
	if err != nil {
		panic(err)
	}
	call := resp.Message.ToolCalls[0]
	fmt.Println(resp.FinishReason, call.Name, string(call.Arguments), resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output: tool_calls clock {} 82 11
}

// Every failure is a *loop.ModelError that says whether another attempt
// may help and how long the provider asks to wait.
func Example_rateLimited() {
	srv := fakellm.New(fakellm.MustRecorded("openai/rate_limited"))
	defer srv.Close()

	model, _ := openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: srv.URL() + "/v1", APIKey: "sk-test"})
	_, err := model.Generate(context.Background(), &loop.ModelRequest{
		Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}},
	})
	var me *loop.ModelError
	if errors.As(err, &me) {
		fmt.Println(me.Status, me.Type, me.Retryable, me.RetryAfter)
	}
	// Output: 429 rate_limit_exceeded true 20s
}

// Arguments that are not valid JSON do not fail the call: they reach the
// engine as a JSON string, which the engine reports to the model as a tool
// error.
func Example_invalidArguments() {
	srv := fakellm.New(fakellm.MustRecorded("openai/invalid_arguments"))
	defer srv.Close()

	model, _ := openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: srv.URL() + "/v1", APIKey: "sk-test"})
	resp, _ := model.Generate(context.Background(), &loop.ModelRequest{
		Messages: []events.Message{{Role: events.RoleUser, Content: "6*7?"}},
	})
	var raw string
	_ = json.Unmarshal(resp.Message.ToolCalls[0].Arguments, &raw)
	fmt.Println(raw)
	// Output: {"expression": "6*7"
}
