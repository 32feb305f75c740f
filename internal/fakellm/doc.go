// Package fakellm is a fake language-model provider for tests: an httptest
// server that answers OpenAI's POST /v1/chat/completions and Anthropic's
// POST /v1/messages from a Script of recorded exchanges, records every
// request it receives, and fails clearly when asked more than its script has.
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
// Recorded lists the recorded exchanges; New and Close run a server without
// a *testing.T (for examples).
package fakellm
