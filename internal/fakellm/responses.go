package fakellm

import (
	"encoding/json"
	"fmt"
	"slices"
)

// ResponsesStream is an sse step streaming a response of the blocks as the
// OpenAI Responses API streams one (stream: true): response.created and
// response.in_progress; for a text block a message item (output_item.added,
// content_part.added, two output_text.delta, output_text.done,
// content_part.done, output_item.done); for a ToolUse block a function_call
// item (its ID is the call_id, its Input the arguments, streamed as
// function_call_arguments.delta events of at most 16 bytes, then .done);
// then response.completed with the whole response and its usage. Every
// event names its type and carries a sequence_number. It panics on an Input
// that does not marshal: a test's mistake.
func ResponsesStream(model string, blocks ...Block) Step {
	const respID = "resp_fakellm"
	var evs []Event
	add := func(data map[string]any) {
		data["sequence_number"] = len(evs)
		evs = append(evs, Event{Event: data["type"].(string), Data: mustJSON(data)})
	}
	response := func(status string, output []any) map[string]any {
		r := map[string]any{"id": respID, "object": "response", "created_at": 1764000000, "status": status,
			"error": nil, "incomplete_details": nil, "instructions": nil, "model": model, "output": output,
			"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "store": false,
			"reasoning": map[string]any{"effort": "medium", "summary": "auto"}, "usage": nil}
		if status == "completed" {
			r["usage"] = map[string]any{"input_tokens": 3210, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": 42, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 3252}
		}
		return r
	}
	add(map[string]any{"type": "response.created", "response": response("in_progress", []any{})})
	add(map[string]any{"type": "response.in_progress", "response": response("in_progress", []any{})})
	var output []any
	for i, b := range blocks {
		if b.Name == "" {
			id := fmt.Sprintf("msg_fakellm_%d", i)
			part := func(text string) map[string]any {
				return map[string]any{"type": "output_text", "annotations": []any{}, "logprobs": []any{}, "text": text}
			}
			item := func(status string, content []any) map[string]any {
				return map[string]any{"id": id, "type": "message", "status": status, "role": "assistant", "content": content}
			}
			add(map[string]any{"type": "response.output_item.added", "output_index": i, "item": item("in_progress", []any{})})
			add(map[string]any{"type": "response.content_part.added", "item_id": id, "output_index": i, "content_index": 0, "part": part("")})
			half := len(b.Text) / 2
			for _, d := range []string{b.Text[:half], b.Text[half:]} {
				add(map[string]any{"type": "response.output_text.delta", "item_id": id, "output_index": i, "content_index": 0, "delta": d, "logprobs": []any{}})
			}
			add(map[string]any{"type": "response.output_text.done", "item_id": id, "output_index": i, "content_index": 0, "text": b.Text, "logprobs": []any{}})
			add(map[string]any{"type": "response.content_part.done", "item_id": id, "output_index": i, "content_index": 0, "part": part(b.Text)})
			done := item("completed", []any{part(b.Text)})
			add(map[string]any{"type": "response.output_item.done", "output_index": i, "item": done})
			output = append(output, done)
			continue
		}
		args, err := json.Marshal(b.Input)
		if err != nil {
			panic(fmt.Sprintf("fakellm: function_call %s arguments: %v", b.Name, err))
		}
		id := fmt.Sprintf("fc_fakellm_%d", i)
		item := func(status, arguments string) map[string]any {
			return map[string]any{"id": id, "type": "function_call", "status": status, "arguments": arguments, "call_id": b.ID, "name": b.Name}
		}
		add(map[string]any{"type": "response.output_item.added", "output_index": i, "item": item("in_progress", "")})
		for part := range slices.Chunk(args, 16) {
			add(map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": i, "delta": string(part)})
		}
		add(map[string]any{"type": "response.function_call_arguments.done", "item_id": id, "output_index": i, "arguments": string(args)})
		done := item("completed", string(args))
		add(map[string]any{"type": "response.output_item.done", "output_index": i, "item": done})
		output = append(output, done)
	}
	if output == nil {
		output = []any{}
	}
	add(map[string]any{"type": "response.completed", "response": response("completed", output)})
	return Step{Path: PathResponses, Kind: KindSSE, Events: evs}
}
