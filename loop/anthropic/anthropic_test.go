package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/fakellm"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/anthropic"
)

func newModel(t *testing.T, srv *fakellm.Server, mod func(*anthropic.Config)) *anthropic.Model {
	t.Helper()
	cfg := anthropic.Config{Model: "claude-sonnet-4-5", BaseURL: srv.URL(), APIKey: "test-key"}
	if mod != nil {
		mod(&cfg)
	}
	m, err := anthropic.New(cfg)
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
  {"name":"clock","description":"Tells the time.","input_schema":{"type":"object","properties":{}}},
  {"name":"calculator","description":"Evaluates an arithmetic expression.",
    "input_schema":{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}}]`

func TestConversationWithTwoToolSteps(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("anthropic/two_tool_steps"))
	temp := 0.2
	m := newModel(t, srv, func(c *anthropic.Config) {
		c.Temperature = &temp
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
	want1 := events.Message{Role: events.RoleAssistant, Content: "I'll check the time first.",
		ToolCalls: []events.ToolCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "clock", Arguments: json.RawMessage(`{}`)}}}
	if !reflect.DeepEqual(r1.Message, want1) || r1.Usage != (events.Usage{InputTokens: 472, OutputTokens: 54}) ||
		r1.FinishReason != "tool_calls" || r1.Model != "claude-sonnet-4-5-20250929" {
		t.Fatalf("step 1 reply = %+v", r1)
	}
	msgs = append(msgs, r1.Message, events.Message{Role: events.RoleTool, ToolCallID: "toolu_01A09q90qw90lq917835lq9", Name: "clock", Content: "12:00 UTC"})

	r2, err := m.Generate(ctx, &loop.ModelRequest{Messages: msgs, Tools: demoTools})
	if err != nil {
		t.Fatalf("step 2: %v", err)
	}
	if r2.Message.Content != "" || len(r2.Message.ToolCalls) != 1 || r2.Message.ToolCalls[0].Name != "calculator" ||
		string(r2.Message.ToolCalls[0].Arguments) != `{"expression":"6*7"}` || r2.Usage.InputTokens != 561 {
		t.Fatalf("step 2 reply = %+v", r2)
	}
	msgs = append(msgs, r2.Message, events.Message{Role: events.RoleTool, ToolCallID: "toolu_01B19r01rx01mr028946mr0", Name: "calculator", Content: "42"})

	r3, err := m.Generate(ctx, &loop.ModelRequest{Messages: msgs, Tools: demoTools})
	if err != nil {
		t.Fatalf("step 3: %v", err)
	}
	// Text blocks are joined; cache writes and reads count as input.
	if r3.Message.Content != "It is 12:00 UTC, and 6*7 = 42." || r3.Message.ToolCalls != nil || r3.FinishReason != "stop" ||
		r3.Usage != (events.Usage{InputTokens: 630, OutputTokens: 18}) {
		t.Fatalf("step 3 reply = %+v", r3)
	}

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(reqs))
	}
	h := reqs[0].Header
	if h.Get("X-Api-Key") != "test-key" || h.Get("Anthropic-Version") == "" || h.Get("X-Team") != "hookbus" || reqs[0].Path != fakellm.PathAnthropic {
		t.Errorf("request 1: %s, headers %v", reqs[0].Path, h)
	}
	assertJSON(t, "request 1", reqs[0].Body, `{
	  "model": "claude-sonnet-4-5",
	  "max_tokens": 4096,
	  "temperature": 0.2,
	  "system": [{"type": "text", "text": "Be brief."}],
	  "messages": [{"role": "user", "content": [{"type": "text", "text": "What time is it, and what is 6*7?"}]}],
	  "tools": `+demoToolsJSON+`}`)
	assertJSON(t, "request 3", reqs[2].Body, `{
	  "model": "claude-sonnet-4-5",
	  "max_tokens": 4096,
	  "temperature": 0.2,
	  "system": [{"type": "text", "text": "Be brief."}],
	  "messages": [
	    {"role": "user", "content": [{"type": "text", "text": "What time is it, and what is 6*7?"}]},
	    {"role": "assistant", "content": [
	      {"type": "text", "text": "I'll check the time first."},
	      {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "clock", "input": {}}]},
	    {"role": "user", "content": [
	      {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": [{"type": "text", "text": "12:00 UTC"}]}]},
	    {"role": "assistant", "content": [
	      {"type": "tool_use", "id": "toolu_01B19r01rx01mr028946mr0", "name": "calculator", "input": {"expression": "6*7"}}]},
	    {"role": "user", "content": [
	      {"type": "tool_result", "tool_use_id": "toolu_01B19r01rx01mr028946mr0", "content": [{"type": "text", "text": "42"}]}]}],
	  "tools": `+demoToolsJSON+`}`)
}

// Two system messages, two tool calls answered by two tool results (one an
// error) and a user message after them, an empty assistant message,
// arguments that are not an object: the request the server receives.
func TestRequestMappingAndStopReasons(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("anthropic/stop_reasons"))
	m := newModel(t, srv, func(c *anthropic.Config) { c.MaxTokens = 512 })
	msgs := []events.Message{
		{Role: events.RoleSystem, Content: "Be brief."},
		{Role: events.RoleUser, Content: "Add and time."},
		{Role: events.RoleSystem, Content: "Answer in English."},
		{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{
			{ID: "toolu_1", Name: "calculator", Arguments: json.RawMessage(`"{\"expression\": \"6*7\""`)},
			{ID: "toolu_2", Name: "clock"},
		}},
		{Role: events.RoleTool, ToolCallID: "toolu_1", Name: "calculator", Content: "error: arguments are not a JSON object"},
		{Role: events.RoleTool, ToolCallID: "toolu_2", Name: "clock", Content: ""},
		{Role: events.RoleUser, Content: "Go on."},
		{Role: events.RoleAssistant, Content: ""},
		{Role: events.RoleUser, Content: "Please."},
	}
	for i, want := range []string{"length", "stop", "content_filter"} {
		r, err := m.Generate(context.Background(), &loop.ModelRequest{Messages: msgs})
		if err != nil || r.FinishReason != want {
			t.Fatalf("reply %d = %+v, %v; want finish reason %q", i+1, r, err, want)
		}
	}
	assertJSON(t, "request", srv.Requests()[0].Body, `{
	  "model": "claude-sonnet-4-5",
	  "max_tokens": 512,
	  "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Answer in English."}],
	  "messages": [
	    {"role": "user", "content": [{"type": "text", "text": "Add and time."}]},
	    {"role": "assistant", "content": [
	      {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {}},
	      {"type": "tool_use", "id": "toolu_2", "name": "clock", "input": {}}]},
	    {"role": "user", "content": [
	      {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": [{"type": "text", "text": "error: arguments are not a JSON object"}]},
	      {"type": "tool_result", "tool_use_id": "toolu_2"},
	      {"type": "text", "text": "Go on."},
	      {"type": "text", "text": "Please."}]}]}`)
}

func TestBadRequestIsNotSent(t *testing.T) {
	srv := fakellm.New(fakellm.MustRecorded("anthropic/two_tool_steps"))
	defer srv.Close()
	m := newModel(t, srv, nil)
	for name, req := range map[string]*loop.ModelRequest{
		"tool schema":  {Tools: []events.ToolSpec{{Name: "x", Parameters: json.RawMessage(`"object"`)}}},
		"role":         {Messages: []events.Message{{Role: "narrator", Content: "x"}}},
		"tool call id": {Messages: []events.Message{{Role: events.RoleTool, Content: "x"}}},
	} {
		_, err := m.Generate(context.Background(), req)
		var me *loop.ModelError
		if !errors.As(err, &me) || me.Type != "bad_request" || me.Retryable || !errors.Is(err, anthropic.ErrRequest) {
			t.Errorf("%s: err = %v, want a bad_request ModelError wrapping ErrRequest", name, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("server saw %d requests, want none", n)
	}
}

func TestNewConfig(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	for name, cfg := range map[string]anthropic.Config{
		"no model":        {},
		"no key":          {Model: "claude-sonnet-4-5"},
		"negative max":    {Model: "claude-sonnet-4-5", APIKey: "k", MaxTokens: -1},
		"needs streaming": {Model: "claude-sonnet-4-5", APIKey: "k", MaxTokens: 64000},
	} {
		if _, err := anthropic.New(cfg); !errors.Is(err, anthropic.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestEnvironment(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("anthropic/overloaded_then_success"))
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	t.Setenv("ANTHROPIC_API_KEY", "env-key")
	m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, _ = m.Generate(context.Background(), &loop.ModelRequest{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}})
	if h := srv.Requests()[0].Header.Get("X-Api-Key"); h != "env-key" {
		t.Errorf("x-api-key = %q, want the key from ANTHROPIC_API_KEY", h)
	}
	t.Setenv("ANTHROPIC_API_KEY", "")
	m, err = anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatalf("New with a proxy base URL and no key: %v", err)
	}
	if _, err := m.Generate(context.Background(), &loop.ModelRequest{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatalf("step 2: %v", err)
	}
	if h := srv.Requests()[1].Header.Get("X-Api-Key"); h != "" {
		t.Errorf("x-api-key = %q with no key, want none", h)
	}
}
