package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/fakellm"
)

// A recorded OpenAI conversation and a recorded Anthropic one, each with
// two tool calls, run end to end through `loop serve --agents FILE`
// against a server replaying the providers' recorded responses: the exact
// stage sequence, the tool results reaching the model, usage summed.
func TestRealProvidersThroughServeAgents(t *testing.T) {
	oa := fakellm.Start(t, fakellm.MustRecorded("openai/two_tool_steps"))
	an := fakellm.Start(t, fakellm.MustRecorded("anthropic/two_tool_steps"))
	dir := t.TempDir()
	file := fmt.Sprintf(`agents:
  - id: gpt
    model: openai:gpt-4o-mini
    base_url: %s/v1
    api_key_env: FAKE_PROVIDER_KEY
    system: You answer with the tools.
    tools: [clock, calculator]
  - id: claude
    model: anthropic:claude-sonnet-4-5
    base_url: %s
    api_key_env: FAKE_PROVIDER_KEY
    system: You answer with the tools.
    tools: [clock, calculator]
`, oa.URL(), an.URL())
	path := filepath.Join(dir, "agents.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_PROVIDER_KEY", "sk-test")
	addr := freeAddr(t)
	url := "nats://" + addr
	_, serveOut := start(t, "loop", "serve", "--store", filepath.Join(dir, "store"), "--listen", addr, "--agents", path)
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return strings.Contains(serveOut.String(), "taking runs") },
		"loop serve to start; output so far:\n%s", serveOut)

	for _, tc := range []struct {
		agent    string
		srv      *fakellm.Server
		in, out  int
		toolText func(body []byte) []string // the tool results the model was sent
	}{
		{"gpt", oa, 82 + 121 + 160, 11 + 24 + 15, openaiToolResults},
		{"claude", an, 472 + 561 + 30 + 100 + 500, 54 + 61 + 18, anthropicToolResults},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			r := run(t, "loop", "submit", "--nats", url, "--agent", tc.agent, "--session", "s-"+tc.agent, "--wait", "What time is it, and what is 6*7?")
			if r.code != 0 || !strings.Contains(r.stdout, "6*7 = 42.") {
				t.Fatalf("submit --wait: exit %d\n%s\n%s\nworker:\n%s", r.code, r.stdout, r.stderr, serveOut)
			}
			rep := run(t, "observer", "replay", "--nats", url, "--agent", tc.agent, "--json")
			evs := jsonEvents(t, rep.stdout)
			want := []events.Stage{
				events.StageIntake, events.StageRunStarted,
				events.StageStepStarted, events.StageContextAssembled, events.StageModelResponded,
				events.StageToolBefore, events.StageToolAfter, events.StageStepCompleted,
				events.StageStepStarted, events.StageContextAssembled, events.StageModelResponded,
				events.StageToolBefore, events.StageToolAfter, events.StageStepCompleted,
				events.StageStepStarted, events.StageContextAssembled, events.StageModelResponded, events.StageStepCompleted,
				events.StageStop, events.StageRunCompleted,
			}
			var got []events.Stage
			for _, e := range evs {
				got = append(got, e.Stage)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("stages:\n got %v\nwant %v", got, want)
			}
			var rc events.RunCompleted
			mustDecode(t, evs[len(evs)-1], &rc)
			if rc.Usage.InputTokens != tc.in || rc.Usage.OutputTokens != tc.out || rc.Steps != 3 {
				t.Fatalf("run.completed %+v, want usage %d+%d over 3 steps", rc, tc.in, tc.out)
			}
			// The tool results reached the model: the third request holds
			// both, the clock's time and the calculator's 42.
			reqs := tc.srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("the provider got %d requests, want 3", len(reqs))
			}
			results := tc.toolText(reqs[2].Body)
			if len(results) != 2 || !strings.HasSuffix(results[0], "Z") || results[1] != "42" {
				t.Fatalf("the model was sent the tool results %q, want the time and 42", results)
			}
			if err := tc.srv.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func openaiToolResults(body []byte) []string {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	var out []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

func anthropicToolResults(body []byte) []string {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	var out []string
	for _, m := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type != "tool_result" {
				continue
			}
			var s string
			if json.Unmarshal(b.Content, &s) == nil {
				out = append(out, s)
				continue
			}
			var parts []struct{ Text string }
			_ = json.Unmarshal(b.Content, &parts)
			for _, p := range parts {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

// loop run --model openai:MODEL works with the key and base URL in the
// environment, as it would against OpenAI, vLLM, Ollama or LiteLLM.
func TestLoopRunWithAnOpenAIModel(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("openai/two_tool_steps"))
	t.Setenv("OPENAI_BASE_URL", srv.URL()+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	store := filepath.Join(t.TempDir(), "store")
	r := run(t, "loop", "run", "--store", store, "--listen", "none", "--model", "openai:gpt-4o-mini", "--tools", "clock,calculator", "What time is it, and what is 6*7?")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "It is 12:00 UTC, and 6*7 = 42." {
		t.Fatalf("loop run --model: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if len(srv.Requests()) != 3 {
		t.Fatalf("the provider got %d requests, want 3", len(srv.Requests()))
	}
	// A bad model spec and an unknown tool are usage mistakes, named.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "gemini:pro"}, `unknown model provider "gemini"`},
		{[]string{"--tools", "Bsh"}, `unknown tool "Bsh"`},
	} {
		args := append([]string{"run", "--store", store, "--listen", "none"}, tc.args...)
		r := run(t, "loop", append(args, "hi")...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("loop %v: exit %d, stderr %s; want 2 naming %q", args, r.code, r.stderr, tc.want)
		}
	}
}
