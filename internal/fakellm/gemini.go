package fakellm

import (
	"encoding/json"
	"fmt"
)

// Streamed Gemini API answers, as generativelanguage.googleapis.com streams
// them to POST /v1beta/models/{model}:streamGenerateContent?alt=sse (the
// endpoint Gemini CLI calls): server-sent events without event names, each
// data line a whole GenerateContentResponse (candidates with the model's
// content parts, usageMetadata, modelVersion, responseId), the last one
// carrying finishReason. A function call arrives whole in one part (Gemini
// does not stream a call's arguments) and has no id: the client names it.

// GeminiStreamPath is the path of a model's streaming endpoint.
func GeminiStreamPath(model string) string {
	return "/v1beta/models/" + model + ":streamGenerateContent"
}

// GeminiStream is an sse step streaming a model turn of the blocks: a text
// block as two chunks, a ToolUse block as a functionCall part of its own
// chunk (its ID is not sent: the Gemini API has none), the last chunk with
// finishReason "STOP" and the token counts, as the API sends them. It
// panics on an Input that does not marshal to an object: a test's mistake.
func GeminiStream(model string, blocks ...Block) Step {
	type chunk struct {
		parts  []any
		finish bool
	}
	var chunks []chunk
	for _, b := range blocks {
		if b.Name == "" {
			half := len(b.Text) / 2
			for _, part := range []string{b.Text[:half], b.Text[half:]} {
				if part != "" {
					chunks = append(chunks, chunk{parts: []any{map[string]any{"text": part}}})
				}
			}
			continue
		}
		args, err := json.Marshal(b.Input)
		if err != nil || len(args) == 0 || args[0] != '{' {
			panic(fmt.Sprintf("fakellm: functionCall %s args must be an object: %s %v", b.Name, args, err))
		}
		chunks = append(chunks, chunk{parts: []any{map[string]any{
			"functionCall": map[string]any{"name": b.Name, "args": json.RawMessage(args)},
			// Thinking models sign the part that ends their thought; the
			// client sends it back with the call.
			"thoughtSignature": "ZmFrZWxsbS10aG91Z2h0LXNpZ25hdHVyZQ==",
		}}})
	}
	if len(chunks) == 0 {
		chunks = append(chunks, chunk{parts: []any{map[string]any{"text": ""}}})
	}
	chunks[len(chunks)-1].finish = true

	const prompt, thoughts = 12779, 64
	var evs []Event
	out := 0
	for _, c := range chunks {
		out += 8
		cand := map[string]any{"content": map[string]any{"parts": c.parts, "role": "model"}, "index": 0}
		usage := map[string]any{"promptTokenCount": prompt, "totalTokenCount": prompt + thoughts,
			"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": prompt}}, "thoughtsTokenCount": thoughts}
		if c.finish {
			cand["finishReason"] = "STOP"
			usage["candidatesTokenCount"] = out
			usage["totalTokenCount"] = prompt + thoughts + out
		}
		evs = append(evs, Event{Data: mustJSON(map[string]any{"candidates": []any{cand}, "usageMetadata": usage,
			"modelVersion": model, "responseId": "fakellm-gemini-response"})})
	}
	return Step{Path: GeminiStreamPath(model), Kind: KindSSE, Events: evs}
}
