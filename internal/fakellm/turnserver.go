package fakellm

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// TurnServer is an http.Handler answering OpenAI's POST /v1/chat/completions
// and /v1/responses, Anthropic's POST /v1/messages and the Gemini API's
// POST /v1beta/models/{model}:generateContent and :streamGenerateContent
// from a script of Turns (the handler of loop fake-model). It writes a line
// to its log for each request it answers. Its methods are safe for
// concurrent use.
type TurnServer struct {
	turns  *Turns
	log    io.Writer
	record io.Writer // nil: no record

	mu    sync.Mutex
	taken []bool
	n     int
}

// NewTurnServer answers from t, logging to log (nil: no log).
func NewTurnServer(t *Turns, log io.Writer) *TurnServer {
	if log == nil {
		log = io.Discard
	}
	return &TurnServer{turns: t, log: log, taken: make([]bool, len(t.Turns))}
}

// RecordTo makes s write each request it receives to w as one line of
// JSON (a RecordedRequest), before it answers it, and returns s. Writes
// are serialized.
func (s *TurnServer) RecordTo(w io.Writer) *TurnServer {
	s.record = w
	return s
}

// RecordedRequest is one line of a TurnServer's record (loop fake-model
// --record): a request as received, and the turn that answered it.
type RecordedRequest struct {
	// N counts the requests received, from 1.
	N      int    `json:"n"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// API is the model API the request was read as ("openai chat",
	// "openai responses", "anthropic messages", "gemini"); "" for a
	// request no API this fake serves.
	API string `json:"api,omitempty"`
	// Turn is the script's turn that answered it, from 1; 0 when none did.
	Turn int `json:"turn"`
	// Body is the request's body: as received when it is JSON, else as a
	// JSON string.
	Body json.RawMessage `json:"body"`
}

// write records one request; a failed write is logged, never an answer's
// failure.
func (s *TurnServer) write(r RecordedRequest, body []byte) {
	if s.record == nil {
		return
	}
	if json.Valid(body) {
		r.Body = body
	} else {
		r.Body = mustJSON(string(body))
	}
	b := mustJSON(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.record.Write(append(b, '\n')); err != nil {
		fmt.Fprintf(s.log, "request %d: not recorded: %v\n", r.N, err)
	}
}

// next takes the first turn not yet taken whose When the body contains,
// as sent or in one of its JSON strings (unescaped: "a && b" matches
// "a \u0026\u0026 b").
func (s *TurnServer) next(body []byte) (Turn, int, int, bool) {
	var texts []string
	var v any
	if json.Unmarshal(body, &v) == nil {
		texts = jsonStrings(v, texts)
	}
	contains := func(when string) bool {
		return strings.Contains(string(body), when) || slices.ContainsFunc(texts, func(t string) bool { return strings.Contains(t, when) })
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	for i, t := range s.turns.Turns {
		if !s.taken[i] && (t.When == "" || contains(t.When)) {
			s.taken[i] = true
			return t, i + 1, s.n, true
		}
	}
	return Turn{}, 0, s.n, false
}

// jsonStrings appends the strings of a decoded JSON value to out.
func jsonStrings(v any, out []string) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, e := range v {
			out = jsonStrings(e, out)
		}
	case map[string]any:
		for _, e := range v {
			out = jsonStrings(e, out)
		}
	}
	return out
}

// count counts a request no turn is taken for.
func (s *TurnServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return s.n
}

// ServeHTTP answers one request with the next turn.
func (s *TurnServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead {
		// A client's connectivity check (Claude Code's HEAD /).
		w.WriteHeader(http.StatusOK)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	api, model, stream := "", req.Model, req.Stream
	p := r.URL.Path
	switch {
	case r.Method != http.MethodPost:
	case p == PathOpenAI:
		api = "openai chat"
	case p == PathResponses:
		api = "openai responses"
	case p == PathAnthropic:
		api = "anthropic messages"
	case strings.Contains(p, "/models/") && (strings.HasSuffix(p, ":streamGenerateContent") || strings.HasSuffix(p, ":generateContent")):
		call := p[strings.LastIndex(p, "/models/")+len("/models/"):]
		colon := strings.LastIndex(call, ":")
		api, model, stream = "gemini", call[:colon], call[colon+1:] == "streamGenerateContent"
	}
	model = cmp.Or(model, "fake-model")
	if api == "" {
		s.write(RecordedRequest{N: s.count(), Method: r.Method, Path: p}, body)
		fmt.Fprintf(s.log, "%s %s: not a model API this fake serves (404)\n", r.Method, p)
		fail(w, http.StatusNotFound, fmt.Sprintf("fake-model serves POST %s, %s, %s and /v1beta/models/MODEL:generateContent|streamGenerateContent, not %s %s", PathOpenAI, PathResponses, PathAnthropic, r.Method, p))
		return
	}
	turn, i, n, ok := s.next(body)
	s.write(RecordedRequest{N: n, Method: r.Method, Path: p, API: api, Turn: i}, body)
	mode := ""
	if stream {
		mode = ", stream"
	}
	if !ok {
		msg := fmt.Sprintf("request %d (%s %s) has no turn left in the script to answer it", n, r.Method, p)
		fmt.Fprintf(s.log, "request %d: %s%s %s: no turn left (501)\n", n, api, mode, model)
		fail(w, http.StatusNotImplemented, msg)
		return
	}
	fmt.Fprintf(s.log, "request %d: %s%s %s: turn %d (line %d): %s\n", n, api, mode, model, i, turn.line, turn)
	var st Step
	switch api {
	case "openai chat":
		st = chatStep(model, stream, turn.blocks("call_fake_", n))
	case "openai responses":
		st = ResponsesStream(model, turn.blocks("call_fake_", n)...)
		if !stream {
			var done struct {
				Response json.RawMessage `json:"response"`
			}
			_ = json.Unmarshal(st.Events[len(st.Events)-1].Data, &done)
			st = Step{Body: done.Response}
		}
	case "anthropic messages":
		st = AnthropicStream(model, turn.blocks("toolu_fake_", n)...)
		if !stream {
			st = anthropicMessage(model, turn.blocks("toolu_fake_", n))
		}
	case "gemini":
		st = GeminiStream(model, turn.blocks("", n)...)
		if !stream {
			st = geminiContent(model, turn.blocks("", n))
		}
	}
	st.write(w)
}

// fail answers an error, with x-should-retry: false (honoured by the OpenAI
// and Anthropic SDKs and loop's providers) so that a client does not retry.
func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Should-Retry", "false")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "fake_model", "message": msg}})
	_, _ = w.Write(b)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakellm: %v", err))
	}
	return b
}

// chatStep is a chat completion of the blocks, or its chunks when streamed.
func chatStep(model string, stream bool, blocks []Block) Step {
	msg := map[string]any{"role": "assistant", "content": nil}
	var calls []any
	finish := "stop"
	for _, b := range blocks {
		if b.Name == "" {
			msg["content"] = b.Text
			continue
		}
		finish = "tool_calls"
		call := map[string]any{"id": b.ID, "type": "function", "function": map[string]any{"name": b.Name, "arguments": string(mustJSON(b.Input))}}
		if stream {
			call["index"] = len(calls)
		}
		calls = append(calls, call)
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !stream {
		return Step{Body: mustJSON(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": 1764000000, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})}
	}
	chunk := func(delta map[string]any, finish any) Event {
		return Event{Data: mustJSON(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1764000000, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})}
	}
	evs := []Event{chunk(msg, nil), chunk(map[string]any{}, finish)}
	// The stream ends with a literal [DONE], not JSON: it is written as the
	// data of the last event.
	return Step{Kind: KindSSE, Events: append(evs, Event{Data: json.RawMessage("[DONE]")})}
}

// anthropicMessage is a Messages API message of the blocks.
func anthropicMessage(model string, blocks []Block) Step {
	content := []any{}
	stop := "end_turn"
	for _, b := range blocks {
		if b.Name == "" {
			content = append(content, map[string]any{"type": "text", "text": b.Text})
			continue
		}
		stop = "tool_use"
		content = append(content, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": b.Input})
	}
	return Step{Body: mustJSON(map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}})}
}

// geminiContent is a GenerateContentResponse of the blocks.
func geminiContent(model string, blocks []Block) Step {
	parts := []any{}
	for _, b := range blocks {
		if b.Name == "" {
			parts = append(parts, map[string]any{"text": b.Text})
			continue
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": b.Name, "args": b.Input}})
	}
	return Step{Body: mustJSON(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"parts": parts, "role": "model"},
		"finishReason": "STOP", "index": 0}}, "usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion": model, "responseId": "fake-model-response"})}
}
