package fakellm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/hookbus/hookbus/internal/fakellm"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

const twoTurns = `# a tool call, then the answer
turns:
  - reply: Let me look.
    tool:
      name: Bash
      arguments: {command: ls -la}
  - reply: Two files.
`

// serveTurns serves the script on a test server and returns its URL and
// its log.
func serveTurns(t *testing.T, script string) (string, *lockedBuffer) {
	t.Helper()
	turns, err := fakellm.ParseTurns("script.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	srv := httptest.NewServer(fakellm.NewTurnServer(turns, log))
	t.Cleanup(srv.Close)
	return srv.URL, log
}

// lockedBuffer is a log a server writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestTurnsOpenAIChat(t *testing.T) {
	for _, stream := range []bool{false, true} {
		url, _ := serveTurns(t, twoTurns)
		client := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0))
		params := openai.ChatCompletionNewParams{Model: "gpt-4.1-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
		for i, want := range []struct{ text, tool, args, finish string }{
			{"Let me look.", "Bash", `{"command":"ls -la"}`, "tool_calls"},
			{"Two files.", "", "", "stop"},
		} {
			var msg openai.ChatCompletionMessage
			var finish string
			if stream {
				s := client.Chat.Completions.NewStreaming(context.Background(), params)
				var acc openai.ChatCompletionAccumulator
				for s.Next() {
					acc.AddChunk(s.Current())
				}
				if err := s.Err(); err != nil {
					t.Fatalf("stream, turn %d: %v", i+1, err)
				}
				msg, finish = acc.Choices[0].Message, acc.Choices[0].FinishReason
			} else {
				c, err := client.Chat.Completions.New(context.Background(), params)
				if err != nil {
					t.Fatalf("turn %d: %v", i+1, err)
				}
				msg, finish = c.Choices[0].Message, c.Choices[0].FinishReason
			}
			var tool, args string
			if len(msg.ToolCalls) == 1 {
				tool, args = msg.ToolCalls[0].Function.Name, msg.ToolCalls[0].Function.Arguments
			}
			if msg.Content != want.text || tool != want.tool || args != want.args || finish != want.finish {
				t.Fatalf("stream %v, turn %d: %q %s %s %s", stream, i+1, msg.Content, tool, args, finish)
			}
		}
	}
}

func TestTurnsOpenAIResponses(t *testing.T) {
	url, _ := serveTurns(t, twoTurns)
	client := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	r, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "gpt-5.1-codex", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Output) != 2 || r.OutputText() != "Let me look." {
		t.Fatalf("response: %+v", r)
	}
	call := r.Output[1].AsFunctionCall()
	if call.Name != "Bash" || call.Arguments != `{"command":"ls -la"}` || call.CallID == "" {
		t.Fatalf("call: %+v", call)
	}
	stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "gpt-5.1-codex", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("go on")},
	})
	var text string
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.output_text.delta" {
			text += ev.Delta
		}
	}
	if err := stream.Err(); err != nil || text != "Two files." {
		t.Fatalf("streamed %q, %v", text, err)
	}
}

func TestTurnsAnthropic(t *testing.T) {
	url, log := serveTurns(t, twoTurns)
	client := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("test"), aoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
	msg, err := client.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 2 || msg.Content[0].Text != "Let me look." ||
		msg.Content[1].Name != "Bash" || string(msg.Content[1].Input) != `{"command":"ls -la"}` {
		t.Fatalf("message: %+v", msg)
	}
	stream := client.Messages.NewStreaming(context.Background(), params)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil || acc.StopReason != anthropic.StopReasonEndTurn || len(acc.Content) != 1 || acc.Content[0].Text != "Two files." {
		t.Fatalf("streamed %+v, %v", acc, err)
	}
	// The script is spent: the next request is refused, and says why.
	_, err = client.Messages.New(context.Background(), params)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotImplemented || !strings.Contains(err.Error(), "no turn left") {
		t.Fatalf("third request: %v", err)
	}
	for _, want := range []string{
		`request 1: anthropic messages claude-sonnet-4-5: turn 1 (line 3): "Let me look." + tool Bash`,
		`request 2: anthropic messages, stream claude-sonnet-4-5: turn 2 (line 7): "Two files."`,
		`request 3: anthropic messages claude-sonnet-4-5: no turn left (501)`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestTurnsGemini(t *testing.T) {
	url, _ := serveTurns(t, twoTurns)
	res, err := http.Post(url+"/v1beta/models/gemini-2.5-flash:generateContent", "application/json", strings.NewReader(`{"contents":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         string `json:"text"`
					FunctionCall *struct {
						Name string         `json:"name"`
						Args map[string]any `json:"args"`
					} `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	err = json.NewDecoder(res.Body).Decode(&r)
	res.Body.Close()
	if err != nil || len(r.Candidates) != 1 || len(r.Candidates[0].Content.Parts) != 2 {
		t.Fatalf("%v %+v", err, r)
	}
	parts := r.Candidates[0].Content.Parts
	if parts[0].Text != "Let me look." || parts[1].FunctionCall == nil || parts[1].FunctionCall.Name != "Bash" || parts[1].FunctionCall.Args["command"] != "ls -la" {
		t.Fatalf("parts %+v", parts)
	}
	res, err = http.Post(url+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.Header.Get("Content-Type") != "text/event-stream" || !strings.Contains(string(b), `"finishReason":"STOP"`) || strings.Count(string(b), "data: ") != 2 {
		t.Fatalf("stream %s:\n%s", res.Header.Get("Content-Type"), b)
	}
}

// A turn with when answers only a request that contains its text, whatever
// its place in the script.
func TestTurnsWhen(t *testing.T) {
	url, _ := serveTurns(t, `turns:
  - when: refused
    reply: The hook refused.
  - reply: First.
  - when: ls && rm
    reply: Escaped.
`)
	for _, c := range []struct{ body, want string }{
		{`{"messages":[{"role":"user","content":"hi"}]}`, "First."},
		{`{"messages":[{"role":"user","content":"the hook refused it"}]}`, "The hook refused."},
		{`{"messages":[{"role":"user","content":"ls \u0026\u0026 rm"}]}`, "Escaped."},
	} {
		res, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(b), `"text":"`+c.want+`"`) {
			t.Fatalf("%s answered %s", c.body, b)
		}
	}
}

// A bad script is refused with the file and line of the mistake.
func TestParseTurnsErrors(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{"turns:\n  - reply: a\n  - rpely: b\n", "s.yaml:3: fakellm: bad script: field rpely not found"},
		{"turns:\n  - reply: a\n  - when: x\n", "s.yaml:3: fakellm: bad script: turn 2 has neither reply nor tool"},
		{"turns:\n  - tool: {arguments: {a: 1}}\n", "s.yaml:2: fakellm: bad script: turn 1: its tool has no name"},
		{"turns:\n  - tool: {name: Bash, arguments: [ls]}\n", "s.yaml:2: fakellm: bad script: cannot unmarshal"},
		{"turns:\n  - reply: a\n  - reply: b: c\n", "s.yaml:3: fakellm: bad script: mapping values are not allowed"},
		{"{}", "s.yaml:1: fakellm: bad script: no turns"},
		{`{"turns": [{"reply": "hi"}, {"tool": {"name": ""}}]}`, "s.yaml:1: fakellm: bad script: turn 2: its tool has no name"},
	} {
		_, err := fakellm.ParseTurns("s.yaml", []byte(c.script))
		if !errors.Is(err, fakellm.ErrBadScript) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %s...", c.script, err, c.want)
		}
	}
}
