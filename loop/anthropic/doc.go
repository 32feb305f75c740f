// Package anthropic is a loop.Model on Anthropic's Messages API with tools,
// through the official SDK (github.com/anthropics/anthropic-sdk-go).
//
//	model, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5"}) // key and URL from ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
//	eng, err := loop.New(loop.Config{..., Model: model})
//
// System messages become the system parameter, assistant tool calls
// tool_use blocks, and consecutive tool results one user message of
// tool_result blocks. Each Generate makes exactly one HTTP attempt (the SDK's
// retries are off) and returns a *loop.ModelError for every failure, which
// the engine records as model.failed and retries when it is retryable (529
// overloaded_error included). The caller's ctx deadline is the call's
// timeout. The full mapping is in docs/AGENTS.md, "Models and providers".
package anthropic
