package fakellm

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Streamed Anthropic Messages API answers, as the real API streams them
// (server-sent events: message_start, content_block_start, deltas,
// content_block_stop, message_delta with the stop reason, message_stop),
// for clients that only stream (Claude Code).

// Block is one content block of a streamed message: text, or a tool_use
// (ID, Name and Input, an object).
type Block struct {
	Text  string
	ID    string
	Name  string
	Input any
}

// Text is a text block.
func Text(s string) Block { return Block{Text: s} }

// ToolUse is a tool_use block.
func ToolUse(id, name string, input any) Block { return Block{ID: id, Name: name, Input: input} }

// AnthropicStream is an sse step streaming an assistant message of the
// blocks, with stop_reason "tool_use" when one of them is a tool_use, else
// "end_turn". A text block is streamed as two text_delta events, a
// tool_use's input as input_json_delta events of at most 16 bytes each, as
// the API splits them. It panics on an Input that does not marshal: a
// test's mistake.
func AnthropicStream(model string, blocks ...Block) Step {
	var evs []Event
	add := func(name string, data map[string]any) {
		evs = append(evs, Event{Event: name, Data: mustJSON(data)})
	}
	add("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	stop := "end_turn"
	for i, b := range blocks {
		if b.Name == "" {
			add("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			half := len(b.Text) / 2
			for _, part := range []string{b.Text[:half], b.Text[half:]} {
				add("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": part}})
			}
		} else {
			stop = "tool_use"
			add("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
				"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			in, err := json.Marshal(b.Input)
			if err != nil {
				panic(fmt.Sprintf("fakellm: tool_use %s input: %v", b.Name, err))
			}
			for part := range slices.Chunk(in, 16) {
				add("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(part)}})
			}
		}
		add("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	add("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	add("message_stop", map[string]any{"type": "message_stop"})
	return Step{Path: PathAnthropic, Kind: KindSSE, Events: evs}
}
