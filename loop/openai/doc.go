// Package openai is a loop.Model on OpenAI's chat completions API with tools,
// through the official SDK (github.com/openai/openai-go/v3). Any server that
// speaks that API works: OpenAI, vLLM, Ollama, LiteLLM, OpenRouter.
//
//	model, err := openai.New(openai.Config{Model: "gpt-4o-mini"}) // key and URL from OPENAI_API_KEY, OPENAI_BASE_URL
//	model, err := openai.New(openai.Config{Model: "llama3.1", BaseURL: "http://localhost:11434/v1"}) // Ollama, no key
//	eng, err := loop.New(loop.Config{..., Model: model})
//
// Each Generate makes exactly one HTTP attempt (the SDK's retries are off)
// and returns a *loop.ModelError for every failure, which the engine records
// as model.failed and retries when it is retryable. The caller's ctx deadline
// is the call's timeout. Tool-call arguments that are not valid JSON reach
// the engine as a JSON string holding the model's raw text. The mapping of
// messages, tools, replies and errors is in docs/AGENTS.md, "Models
// and providers".
package openai
