package scripted

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// Script is what a Model replies: reply i answers step i+1 of a run.
//
// As JSON (the --script file), either {"name": "...", "replies": [...]} or a
// bare list of replies:
//
//	[{"content": "Let me look.", "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
//	 {"content": "6*7 = {{tool:calculator}}"}]
//
// Content may use {{prompt}} (the latest user message), {{tool:NAME}} (the
// latest result of tool NAME) and {{messages}} (how many messages the model
// was given), so a script can echo what really happened in the run. A reply
// may instead fail the model call ({"error": "..."}) and may take time
// ({"delay_ms": 250}). Fields other than these are refused by Parse, with
// the field named; the format is in docs/AGENTS.md ("The scripted model").
type Script struct {
	Name    string  `json:"name,omitempty"`
	Replies []Reply `json:"replies"`
	// Summary answers a compaction's summary request (ModelRequest.Purpose
	// "compact"); it may use {{messages}} (how many messages it was
	// given) and {{prompt}}. Default: "Summary of the conversation so
	// far." Summaries do not use up replies.
	Summary string `json:"summary,omitempty"`
}

// Reply is one scripted assistant message.
type Reply struct {
	Content   string     `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Error makes the model fail on this step with this message.
	Error string `json:"error,omitempty"`
	// DelayMS makes the model take this long to answer (as a real one
	// does); the wait ends early, with ctx's error, if ctx ends.
	DelayMS int `json:"delay_ms,omitempty"`
}

// ToolCall is one scripted tool call; its id is derived from the step
// and position, so runs are reproducible.
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Parse parses a script (object or bare list of replies). An error
// wraps ErrBadScript and says what is wrong and where: an unknown field is
// named ("reply 2: unknown field \"contnet\""), an object where a list
// belongs says "expected a list".
func Parse(b []byte) (*Script, error) {
	var s Script
	trimmed := bytes.TrimSpace(b)
	switch {
	case len(trimmed) == 0:
		return nil, fmt.Errorf("%w: empty (want a list of replies, or {\"name\": ..., \"replies\": [...]})", ErrBadScript)
	case trimmed[0] == '[':
		replies, err := parseReplies(trimmed)
		if err != nil {
			return nil, err
		}
		s.Replies = replies
	case trimmed[0] == '{':
		var top map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &top); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadScript, err)
		}
		for _, k := range slices.Sorted(maps.Keys(top)) {
			v := top[k]
			switch k {
			case "name":
				if err := json.Unmarshal(v, &s.Name); err != nil {
					return nil, fmt.Errorf("%w: name: expected a string, got %s", ErrBadScript, kindOf(v))
				}
			case "replies":
				replies, err := parseReplies(v)
				if err != nil {
					return nil, err
				}
				s.Replies = replies
			default:
				return nil, fmt.Errorf("%w: unknown field %q (a script object has name and replies)", ErrBadScript, k)
			}
		}
	default:
		return nil, fmt.Errorf("%w: expected a list of replies or an object, got %s", ErrBadScript, kindOf(trimmed))
	}
	if len(s.Replies) == 0 {
		return nil, fmt.Errorf("%w: no replies", ErrBadScript)
	}
	return &s, nil
}

// parseReplies parses the list of replies, each strictly.
func parseReplies(b json.RawMessage) ([]Reply, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		if k := kindOf(b); k != "a list" {
			return nil, fmt.Errorf("%w: replies: expected a list of replies, got %s", ErrBadScript, k)
		}
		return nil, fmt.Errorf("%w: replies: %v", ErrBadScript, err)
	}
	out := make([]Reply, len(raw))
	for i, r := range raw {
		if err := parseReply(r, &out[i]); err != nil {
			return nil, fmt.Errorf("%w: reply %d: %s", ErrBadScript, i+1, err)
		}
	}
	return out, nil
}

// parseReply parses one reply: known fields only, each of its type.
func parseReply(b json.RawMessage, r *Reply) error {
	if kindOf(b) != "an object" {
		return fmt.Errorf("expected an object, got %s", kindOf(b))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := fields[k]
		var err error
		switch k {
		case "content":
			err = field(k, v, &r.Content, "a string")
		case "error":
			err = field(k, v, &r.Error, "a string")
		case "delay_ms":
			err = field(k, v, &r.DelayMS, "a number of milliseconds")
			if err == nil && r.DelayMS < 0 {
				err = fmt.Errorf("delay_ms %d is negative", r.DelayMS)
			}
		case "tool_calls":
			err = toolCalls(v, &r.ToolCalls)
		default:
			err = fmt.Errorf("unknown field %q (a reply has content, tool_calls, error, delay_ms)", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func toolCalls(b json.RawMessage, out *[]ToolCall) error {
	var raw []json.RawMessage
	if kindOf(b) != "a list" || json.Unmarshal(b, &raw) != nil {
		return fmt.Errorf("tool_calls: expected a list of tool calls, got %s", kindOf(b))
	}
	for j, c := range raw {
		if kindOf(c) != "an object" {
			return fmt.Errorf("tool call %d: expected an object, got %s", j+1, kindOf(c))
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(c, &fields); err != nil {
			return fmt.Errorf("tool call %d: %v", j+1, err)
		}
		var tc ToolCall
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			v := fields[k]
			switch k {
			case "name":
				if err := field(k, v, &tc.Name, "a string"); err != nil {
					return fmt.Errorf("tool call %d: %w", j+1, err)
				}
			case "arguments":
				if kindOf(v) != "an object" {
					return fmt.Errorf("tool call %d: arguments: expected a JSON object, got %s", j+1, kindOf(v))
				}
				tc.Arguments = v
			default:
				return fmt.Errorf("tool call %d: unknown field %q (a tool call has name and arguments)", j+1, k)
			}
		}
		if tc.Name == "" {
			return fmt.Errorf("tool call %d has no name", j+1)
		}
		*out = append(*out, tc)
	}
	return nil
}

// field decodes v into dst, or says what type was wanted.
func field(name string, v json.RawMessage, dst any, want string) error {
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("%s: expected %s, got %s", name, want, kindOf(v))
	}
	return nil
}

// kindOf names the JSON type of b, for errors.
func kindOf(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '[':
		return "a list"
	case '{':
		return "an object"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if !json.Valid(b) {
		return "invalid JSON"
	}
	return "a number"
}

// Load reads and parses a script file.
func Load(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadScript, err)
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Demo is the built-in script used when no --script is given: it asks
// the clock and the calculator, then answers with their results.
func Demo() *Script {
	return &Script{Name: "demo", Replies: []Reply{
		{
			Content: "Let me check the clock and work that out.",
			ToolCalls: []ToolCall{
				{Name: "clock", Arguments: json.RawMessage(`{}`)},
				{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)},
			},
		},
		{Content: "It is {{tool:clock}}, and 6*7 = {{tool:calculator}}. (You asked: {{prompt}})"},
	}}
}

// Model is a deterministic Model that replies from a Script: reply
// i on step i+1 of every run. It is for demos and tests.
type Model struct {
	script *Script
}

// New returns a model replying from s (Demo when nil).
func New(s *Script) *Model {
	if s == nil {
		s = Demo()
	}
	return &Model{script: s}
}

// Generate implements loop.Model. It returns ErrExhausted when the step has
// no reply.
func (m *Model) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.Purpose == loop.PurposeCompact {
		text := cmp.Or(m.script.Summary, "Summary of the conversation so far.")
		msg := events.Message{Role: events.RoleAssistant, Content: expand(text, req.Messages)}
		return &loop.ModelResponse{Message: msg, Usage: events.Usage{InputTokens: words(req.Messages), OutputTokens: len(strings.Fields(msg.Content))},
			FinishReason: "stop", Model: "scripted:" + m.name(), Provider: "scripted"}, nil
	}
	i := req.Step - 1
	if i < 0 || i >= len(m.script.Replies) {
		return nil, fmt.Errorf("%w: step %d, script has %d replies", ErrExhausted, req.Step, len(m.script.Replies))
	}
	r := m.script.Replies[i]
	if r.DelayMS > 0 {
		t := time.NewTimer(time.Duration(r.DelayMS) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	if r.Error != "" {
		return nil, fmt.Errorf("scripted model error: %s", r.Error)
	}
	msg := events.Message{Role: events.RoleAssistant, Content: expand(r.Content, req.Messages)}
	for j, c := range r.ToolCalls {
		args := c.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		msg.ToolCalls = append(msg.ToolCalls, events.ToolCall{
			ID: "call_" + strconv.Itoa(req.Step) + "_" + strconv.Itoa(j+1), Name: c.Name, Arguments: args,
		})
	}
	in := words(req.Messages)
	finish := "stop"
	if len(msg.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	return &loop.ModelResponse{
		Message:      msg,
		Usage:        events.Usage{InputTokens: in, OutputTokens: len(strings.Fields(msg.Content))},
		FinishReason: finish,
		Model:        "scripted:" + m.name(),
		Provider:     "scripted",
	}, nil
}

func (m *Model) name() string {
	return cmp.Or(m.script.Name, "script")
}

func expand(s string, msgs []events.Message) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	var out strings.Builder
	for {
		before, rest, open := strings.Cut(s, "{{")
		key, after, closed := strings.Cut(rest, "}}")
		if !open || !closed {
			out.WriteString(s)
			return out.String()
		}
		out.WriteString(before)
		out.WriteString(lookup(key, msgs))
		s = after
	}
}

func lookup(key string, msgs []events.Message) string {
	switch {
	case key == "prompt":
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == events.RoleUser {
				return msgs[i].Content
			}
		}
	case key == "messages":
		return strconv.Itoa(len(msgs))
	case strings.HasPrefix(key, "tool:"):
		name := strings.TrimPrefix(key, "tool:")
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == events.RoleTool && msgs[i].Name == name {
				return msgs[i].Content
			}
		}
	}
	return ""
}

// words counts the words of msgs: the scripted model's input tokens.
func words(msgs []events.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(strings.Fields(m.Content))
	}
	return n
}
