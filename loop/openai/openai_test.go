package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/fakellm"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/openai"
)

func newModel(t *testing.T, srv *fakellm.Server, mod func(*openai.Config)) *openai.Model {
	t.Helper()
	cfg := openai.Config{Model: "gpt-4o-mini", BaseURL: srv.URL() + "/v1", APIKey: "test-key"}
	if mod != nil {
		mod(&cfg)
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// assertJSON fails unless got and want are the same JSON value.
func assertJSON(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got is not JSON: %v: %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want is not JSON: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		gi, _ := json.MarshalIndent(g, "", "  ")
		wi, _ := json.MarshalIndent(w, "", "  ")
		t.Fatalf("%s:\ngot  %s\nwant %s", what, gi, wi)
	}
}

var demoTools = []events.ToolSpec{
	{Name: "clock", Description: "Tells the time.", Idempotent: true},
	{Name: "calculator", Description: "Evaluates an arithmetic expression.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`)},
}

const demoToolsJSON = `[
  {"type":"function","function":{"name":"clock","description":"Tells the time.","parameters":{"type":"object","properties":{}}}},
  {"type":"function","function":{"name":"calculator","description":"Evaluates an arithmetic expression.",
    "parameters":{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}}}]`

func TestConversationWithTwoToolSteps(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("openai/two_tool_steps"))
	temp := 0.2
	m := newModel(t, srv, func(c *openai.Config) {
		c.MaxTokens, c.Temperature = 256, &temp
		c.Headers = map[string]string{"X-Team": "hookbus"}
	})
	ctx := context.Background()
	msgs := []events.Message{
		{Role: events.RoleSystem, Content: "Be brief."},
		{Role: events.RoleUser, Content: "What time is it, and what is 6*7?"},
	}

	r1, err := m.Generate(ctx, &loop.ModelRequest{Messages: msgs, Tools: demoTools})
	if err != nil {
		t.Fatalf("step 1: %v", err)
	}
	want1 := events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{{ID: "call_Ijvx9dS0Hk2bLq7vTqA2mZ3c", Name: "clock", Arguments: json.RawMessage(`{}`)}}}
	if !reflect.DeepEqual(r1.Message, want1) || r1.Usage != (events.Usage{InputTokens: 82, OutputTokens: 11}) ||
		r1.FinishReason != "tool_calls" || r1.Model != "gpt-4o-mini-2024-07-18" {
		t.Fatalf("step 1 reply = %+v", r1)
	}
	msgs = append(msgs, r1.Message, events.Message{Role: events.RoleTool, ToolCallID: "call_Ijvx9dS0Hk2bLq7vTqA2mZ3c", Name: "clock", Content: "12:00 UTC"})

	r2, err := m.Generate(ctx, &loop.ModelRequest{Messages: msgs, Tools: demoTools})
	if err != nil {
		t.Fatalf("step 2: %v", err)
	}
	if r2.Message.Content != "Now the sum." || len(r2.Message.ToolCalls) != 1 || r2.Message.ToolCalls[0].Name != "calculator" ||
		string(r2.Message.ToolCalls[0].Arguments) != `{"expression":"6*7"}` || r2.Usage.InputTokens != 121 {
		t.Fatalf("step 2 reply = %+v", r2)
	}
	msgs = append(msgs, r2.Message, events.Message{Role: events.RoleTool, ToolCallID: "call_Q8rT3vW1xY2zA4bC6dE8fG0h", Name: "calculator", Content: "42"})

	r3, err := m.Generate(ctx, &loop.ModelRequest{Messages: msgs, Tools: demoTools})
	if err != nil {
		t.Fatalf("step 3: %v", err)
	}
	if r3.Message.Content != "It is 12:00 UTC, and 6*7 = 42." || r3.Message.ToolCalls != nil || r3.FinishReason != "stop" ||
		r3.Usage != (events.Usage{InputTokens: 160, OutputTokens: 15}) {
		t.Fatalf("step 3 reply = %+v", r3)
	}

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization = %q", got)
	}
	if got := reqs[0].Header.Get("X-Team"); got != "hookbus" {
		t.Errorf("X-Team = %q", got)
	}
	assertJSON(t, "request 1", reqs[0].Body, `{
	  "model": "gpt-4o-mini",
	  "messages": [
	    {"role": "system", "content": "Be brief."},
	    {"role": "user", "content": "What time is it, and what is 6*7?"}],
	  "tools": `+demoToolsJSON+`,
	  "max_completion_tokens": 256,
	  "temperature": 0.2}`)
	assertJSON(t, "request 3", reqs[2].Body, `{
	  "model": "gpt-4o-mini",
	  "messages": [
	    {"role": "system", "content": "Be brief."},
	    {"role": "user", "content": "What time is it, and what is 6*7?"},
	    {"role": "assistant", "tool_calls": [{"id": "call_Ijvx9dS0Hk2bLq7vTqA2mZ3c", "type": "function", "function": {"name": "clock", "arguments": "{}"}}]},
	    {"role": "tool", "tool_call_id": "call_Ijvx9dS0Hk2bLq7vTqA2mZ3c", "content": "12:00 UTC"},
	    {"role": "assistant", "content": "Now the sum.", "tool_calls": [{"id": "call_Q8rT3vW1xY2zA4bC6dE8fG0h", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\":\"6*7\"}"}}]},
	    {"role": "tool", "tool_call_id": "call_Q8rT3vW1xY2zA4bC6dE8fG0h", "content": "42"}],
	  "tools": `+demoToolsJSON+`,
	  "max_completion_tokens": 256,
	  "temperature": 0.2}`)
}

func TestInvalidArgumentsReachTheEngineAsAString(t *testing.T) {
	s := fakellm.MustRecorded("openai/invalid_arguments")
	s.Steps = append(s.Steps, fakellm.MustRecorded("openai/two_tool_steps").Steps[2])
	srv := fakellm.Start(t, s)
	m := newModel(t, srv, func(c *openai.Config) { c.MaxTokens, c.LegacyMaxTokens = 100, true })
	msgs := []events.Message{{Role: events.RoleUser, Content: "6*7?"}}

	r, err := m.Generate(context.Background(), &loop.ModelRequest{Messages: msgs})
	if err != nil {
		t.Fatalf("Generate: %v (invalid arguments must not fail the call)", err)
	}
	calls := r.Message.ToolCalls
	if len(calls) != 2 || string(calls[0].Arguments) != `"{\"expression\": \"6*7\""` || string(calls[1].Arguments) != `{}` {
		t.Fatalf("tool calls = %+v; want the raw text as a JSON string, and {} for empty arguments", calls)
	}
	// Sent back, the call carries the model's raw text again.
	msgs = append(msgs, r.Message,
		events.Message{Role: events.RoleTool, ToolCallID: "call_bad0001", Content: "error: arguments are not a JSON object"},
		events.Message{Role: events.RoleTool, ToolCallID: "call_empty02", Content: "12:00 UTC"})
	if _, err := m.Generate(context.Background(), &loop.ModelRequest{Messages: msgs}); err != nil {
		t.Fatalf("Generate 2: %v", err)
	}
	assertJSON(t, "request 2", srv.Requests()[1].Body, `{
	  "model": "gpt-4o-mini",
	  "max_tokens": 100,
	  "messages": [
	    {"role": "user", "content": "6*7?"},
	    {"role": "assistant", "tool_calls": [
	      {"id": "call_bad0001", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\": \"6*7\""}},
	      {"id": "call_empty02", "type": "function", "function": {"name": "clock", "arguments": "{}"}}]},
	    {"role": "tool", "tool_call_id": "call_bad0001", "content": "error: arguments are not a JSON object"},
	    {"role": "tool", "tool_call_id": "call_empty02", "content": "12:00 UTC"}]}`)
}

func TestBadRequestIsNotSent(t *testing.T) {
	srv := fakellm.New(fakellm.MustRecorded("openai/two_tool_steps"))
	defer srv.Close()
	m := newModel(t, srv, nil)
	for name, req := range map[string]*loop.ModelRequest{
		"tool schema":  {Tools: []events.ToolSpec{{Name: "x", Parameters: json.RawMessage(`["not","an","object"]`)}}},
		"role":         {Messages: []events.Message{{Role: "narrator", Content: "x"}}},
		"tool call id": {Messages: []events.Message{{Role: events.RoleTool, Content: "x"}}},
	} {
		_, err := m.Generate(context.Background(), req)
		var me *loop.ModelError
		if !errors.As(err, &me) || me.Type != "bad_request" || me.Retryable || !errors.Is(err, openai.ErrRequest) {
			t.Errorf("%s: err = %v, want a bad_request ModelError wrapping ErrRequest", name, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("server saw %d requests, want none", n)
	}
}

func TestNewConfig(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	if _, err := openai.New(openai.Config{}); !errors.Is(err, openai.ErrInvalidConfig) {
		t.Errorf("no model: %v, want ErrInvalidConfig", err)
	}
	if _, err := openai.New(openai.Config{Model: "gpt-4o-mini"}); !errors.Is(err, openai.ErrInvalidConfig) {
		t.Errorf("no key for OpenAI: %v, want ErrInvalidConfig", err)
	}
	if _, err := openai.New(openai.Config{Model: "m", BaseURL: "http://x/v1", MaxTokens: -1}); !errors.Is(err, openai.ErrInvalidConfig) {
		t.Errorf("negative MaxTokens: %v, want ErrInvalidConfig", err)
	}
}

func TestEnvironmentAndNoKey(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("openai/server_error_then_success"))
	t.Setenv("OPENAI_BASE_URL", srv.URL()+"/v1")
	t.Setenv("OPENAI_API_KEY", "")
	m, err := openai.New(openai.Config{Model: "llama3.1"})
	if err != nil {
		t.Fatalf("New with a base URL and no key: %v", err)
	}
	if _, err := m.Generate(context.Background(), &loop.ModelRequest{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}}); err == nil {
		t.Fatal("step 1 is a 500")
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q with no key, want none", h)
	}
	t.Setenv("OPENAI_API_KEY", "env-key")
	m, _ = openai.New(openai.Config{Model: "llama3.1"})
	if _, err := m.Generate(context.Background(), &loop.ModelRequest{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatalf("step 2: %v", err)
	}
	if h := srv.Requests()[1].Header.Get("Authorization"); h != "Bearer env-key" {
		t.Errorf("Authorization = %q, want the key from OPENAI_API_KEY", h)
	}
}
