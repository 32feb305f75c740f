// Package fakellm is a fake language-model provider for tests: an httptest
// server that answers OpenAI's POST /v1/chat/completions and
// POST /v1/responses, Anthropic's POST /v1/messages and the Gemini API's
// POST /v1beta/models/{model}:streamGenerateContent from a Script of
// recorded exchanges, records every request it receives, and fails clearly
// when asked more than its script has.
//
// A step of a script is one answer: a status, headers and a body (the real
// APIs' shapes, see testdata/), optionally after a delay, cut off part-way
// (kind "truncate") or sent as server-sent events (kind "sse"):
//
//	srv := fakellm.Start(t, fakellm.MustRecorded("openai/two_tool_steps"))
//	model, _ := openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: srv.URL() + "/v1", APIKey: "test"})
//	...
//	reqs := srv.Requests() // what the provider sent, body by body
//
// Clients that only stream (the coding agents' CLIs) get a model turn of
// Text and ToolUse blocks streamed as their API streams it:
// AnthropicStream for Claude Code (the Messages API: input_json_delta for a
// tool's input, the stop reason in message_delta), GeminiStream for Gemini
// CLI (GenerateContentResponse chunks, a functionCall whole in one part,
// finishReason on the last) and ResponsesStream for Codex CLI (the
// Responses API's response.* events, a function_call item's arguments in
// deltas, response.completed with the usage). Each is held to a recorded
// stream of its API (testdata/anthropic/streaming, gemini/function_call,
// openai/responses_function_call): it sends no event or field the
// recording lacks. HEAD requests (connectivity checks) are answered 200 and
// take no step.
//
//	srv := fakellm.Start(t, &fakellm.Script{Steps: []fakellm.Step{
//		fakellm.AnthropicStream("claude-sonnet-4-5", fakellm.ToolUse("toolu_1", "Bash", map[string]any{"command": "ls"})),
//		fakellm.AnthropicStream("claude-sonnet-4-5", fakellm.Text("Done.")),
//	}})
//
// A script of Turns (ParseTurns, a YAML or JSON file) is for people trying
// a client without an account: TurnServer, the handler of loop fake-model,
// answers any of the four APIs from it, each turn (a reply text, a tool
// call) in the shape of the API asked, streamed when the request streams.
//
// Recorded lists the recorded exchanges; New and Close run a server without
// a *testing.T (for examples).
package fakellm
