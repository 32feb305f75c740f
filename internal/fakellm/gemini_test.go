package fakellm_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/internal/fakellm"
)

// sseData is a server-sent event as the Gemini SDKs read one: a "data: "
// line up to a blank line.
var sseData = regexp.MustCompile(`^\s*data: (.*)(?:\n\n|\r\r|\r\n\r\n)`)

type geminiChunk struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             string `json:"text"`
				Thought          bool   `json:"thought"`
				ThoughtSignature string `json:"thoughtSignature"`
				FunctionCall     *struct {
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
		Index        int    `json:"index"`
	} `json:"candidates"`
	UsageMetadata struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		TotalTokenCount      int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
	ResponseID   string `json:"responseId"`
}

// geminiChunks reads a streamGenerateContent?alt=sse answer as the
// Gemini SDKs do, each event one GenerateContentResponse.
func geminiChunks(t *testing.T, body string) []geminiChunk {
	t.Helper()
	var out []geminiChunk
	for {
		m := sseData.FindStringSubmatch(body)
		if m == nil {
			break
		}
		var c geminiChunk
		if err := json.Unmarshal([]byte(m[1]), &c); err != nil {
			t.Fatalf("chunk %d: %v\n%s", len(out)+1, err, m[1])
		}
		out = append(out, c)
		body = body[len(m[0]):]
	}
	if strings.TrimSpace(body) != "" {
		t.Fatalf("not read as chunks: %q", body)
	}
	return out
}

// A streamed Gemini turn reads back, as the SDKs read it, as the blocks it
// was made of: text over chunks, the function call whole, STOP and the
// token counts on the last chunk.
func TestGeminiStream(t *testing.T) {
	srv := fakellm.Start(t, &fakellm.Script{Steps: []fakellm.Step{
		fakellm.GeminiStream("gemini-2.5-flash", fakellm.Text("Let me look."),
			fakellm.ToolUse("ignored", "run_shell_command", map[string]any{"command": "ls -la /tmp", "description": "List /tmp"})),
	}})
	res, err := http.Post(srv.URL()+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "application/json", strings.NewReader(`{"contents":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", res.StatusCode, ct)
	}
	chunks := geminiChunks(t, string(b))
	var text, call string
	for i, c := range chunks {
		if len(c.Candidates) != 1 || c.Candidates[0].Content.Role != "model" || c.ModelVersion != "gemini-2.5-flash" || c.ResponseID == "" {
			t.Fatalf("chunk %d: %+v", i, c)
		}
		if last := i == len(chunks)-1; (c.Candidates[0].FinishReason == "STOP") != last || (c.UsageMetadata.CandidatesTokenCount > 0) != last {
			t.Fatalf("chunk %d of %d: finishReason %q, candidatesTokenCount %d", i+1, len(chunks), c.Candidates[0].FinishReason, c.UsageMetadata.CandidatesTokenCount)
		}
		for _, p := range c.Candidates[0].Content.Parts {
			text += p.Text
			if p.FunctionCall != nil {
				call = p.FunctionCall.Name + string(p.FunctionCall.Args)
				if p.ThoughtSignature == "" {
					t.Fatal("the function call has no thoughtSignature")
				}
			}
		}
	}
	if text != "Let me look." || call != `run_shell_command{"command":"ls -la /tmp","description":"List /tmp"}` {
		t.Fatalf("text %q, call %s", text, call)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Path != fakellm.GeminiStreamPath("gemini-2.5-flash") {
		t.Fatalf("requests %+v", reqs)
	}
}

// Its chunks hold only what the recorded Gemini API stream holds.
func TestGeminiStreamShape(t *testing.T) {
	sameShape(t, []fakellm.Step{
		fakellm.GeminiStream("gemini-2.5-flash", fakellm.ToolUse("", "run_shell_command", map[string]any{"command": "ls"})),
		fakellm.GeminiStream("gemini-2.5-flash", fakellm.Text("Two files.")),
	}, "gemini/function_call", "args")
}
