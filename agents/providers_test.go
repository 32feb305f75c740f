package agents_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/agents"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/fakellm"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
)

// script joins steps of recorded exchanges: recording name and step index.
func script(t *testing.T, parts ...any) *fakellm.Script {
	t.Helper()
	s := &fakellm.Script{}
	for i := 0; i < len(parts); i += 2 {
		rec := fakellm.MustRecorded(parts[i].(string))
		s.Path = rec.Path
		s.Steps = append(s.Steps, rec.Steps[parts[i+1].(int)])
	}
	return s
}

// runAgainst runs one prompt on an agent of provider whose endpoint is srv,
// with fast retries and a short model timeout, and returns the result and
// the recorded events.
func runAgainst(t *testing.T, provider string, srv *fakellm.Server) (*loop.Result, []*events.Event, error) {
	t.Helper()
	t.Setenv("FAKE_PROVIDER_KEY", "sk-test")
	base := srv.URL()
	model := "anthropic:claude-sonnet-4-5"
	if provider == "openai" {
		base += "/v1"
		model = "openai:gpt-4o-mini"
	}
	f, err := agents.Parse([]byte(fmt.Sprintf("agents:\n  - id: a\n    model: %s\n    base_url: %s\n    api_key_env: FAKE_PROVIDER_KEY\n    tools: [clock, calculator]\n    model_timeout: 1s\n    model_attempts: 3\n", model, base)), "agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Agent("a").Build(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	j := looptest.New()
	cfg := b.Config
	cfg.Emitter, cfg.History = j, j
	cfg.ModelRetry.Backoff, cfg.ModelRetry.MaxBackoff = time.Millisecond, 20*time.Millisecond
	eng, err := loop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, rerr := eng.Run(ctx, &events.RunRequest{AgentID: "a", SessionID: "s", Prompt: "What time is it, and what is 6*7?"})
	return res, j.Events(), rerr
}

func modelFailures(t *testing.T, evs []*events.Event) []events.ModelFailed {
	t.Helper()
	var out []events.ModelFailed
	for _, e := range evs {
		if e.Stage == events.StageModelFailed {
			var p events.ModelFailed
			if err := e.DecodeData(&p); err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}

// Each bad provider response gives the expected model.failed events and
// retries, and ends the run clearly when it cannot go on; nothing hangs.
func TestBadProviderResponsesThroughTheEngine(t *testing.T) {
	two := func(p string) []any {
		return []any{p + "/two_tool_steps", 0, p + "/two_tool_steps", 1, p + "/two_tool_steps", 2}
	}
	with := func(first []any, rest []any) []any { return append(first, rest...) }
	for _, tc := range []struct {
		name     string
		provider string
		steps    []any
		done     bool
		failures []string // Type of each model.failed, in order
		retried  []bool   // whether each was retried
	}{
		{"openai 500 then success", "openai", with([]any{"openai/server_error_then_success", 0}, two("openai")), true, []string{"server_error"}, []bool{true}},
		{"openai 429 with Retry-After", "openai", with([]any{"openai/rate_limited", 0}, two("openai")), true, []string{"rate_limit_exceeded"}, []bool{true}},
		{"openai empty choices", "openai", with([]any{"openai/empty_choices", 0}, two("openai")), true, []string{"bad_response"}, []bool{true}},
		{"openai truncated body", "openai", with([]any{"openai/truncated", 0}, two("openai")), true, []string{"bad_response"}, []bool{true}},
		{"openai slower than the timeout", "openai", with([]any{"openai/slow", 0}, two("openai")), true, []string{"timeout"}, []bool{true}},
		{"openai 400 is not retried", "openai", []any{"openai/invalid_request", 0}, false, []string{"invalid_request_error"}, []bool{false}},
		{"openai 500 three times", "openai", []any{"openai/server_error_then_success", 0, "openai/server_error_then_success", 0, "openai/server_error_then_success", 0}, false,
			[]string{"server_error", "server_error", "server_error"}, []bool{true, true, false}},
		{"anthropic 529 then success", "anthropic", with([]any{"anthropic/overloaded_then_success", 0}, two("anthropic")), true, []string{"overloaded_error"}, []bool{true}},
		{"anthropic truncated body", "anthropic", with([]any{"anthropic/truncated", 0}, two("anthropic")), true, []string{"bad_response"}, []bool{true}},
		{"anthropic 400 is not retried", "anthropic", []any{"anthropic/invalid_request", 0}, false, []string{"invalid_request_error"}, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakellm.Start(t, script(t, tc.steps...))
			res, evs, err := runAgainst(t, tc.provider, srv)
			if tc.done && (err != nil || res.Reason != events.ReasonDone || !strings.Contains(res.Answer, "6*7 = 42")) {
				t.Fatalf("run: %+v, %v; want it done", res, err)
			}
			if !tc.done && (err == nil || res == nil || res.Reason != loop.ReasonFailed || !res.Ended) {
				t.Fatalf("run: %+v, %v; want it failed with run.failed", res, err)
			}
			got := modelFailures(t, evs)
			if len(got) != len(tc.failures) {
				t.Fatalf("model.failed %+v, want %d", got, len(tc.failures))
			}
			for i, f := range got {
				if f.Type != tc.failures[i] || (f.RetryInMS > 0) != tc.retried[i] || f.Attempt != i+1 || f.Provider != tc.provider {
					t.Errorf("model.failed %d = %+v, want type %s retried %t", i, f, tc.failures[i], tc.retried[i])
				}
			}
		})
	}
}

// Invalid JSON arguments from the model are a clear tool error for the
// model, never a crash: the tool does not run and the run goes on.
func TestInvalidToolArgumentsFromOpenAI(t *testing.T) {
	srv := fakellm.Start(t, script(t, "openai/invalid_arguments", 0, "openai/two_tool_steps", 2))
	res, evs, err := runAgainst(t, "openai", srv)
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("run: %+v, %v", res, err)
	}
	for _, e := range evs {
		if e.Stage == events.StageToolAfter {
			var p events.ToolAfter
			_ = e.DecodeData(&p)
			if !p.Result.IsError || !strings.Contains(p.Result.Content, "not a JSON object") {
				t.Fatalf("tool result %+v, want an arguments error", p.Result)
			}
			return
		}
	}
	t.Fatal("no tool.after")
}
