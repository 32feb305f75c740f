// Package modelhttp is what the HTTP model providers (loop/openai,
// loop/anthropic) share: the Endpoint that checks a provider's Config and
// fills its base URL and API key from the environment (each provider's
// variables and default URL as data), the SDK's client options made from
// it (SDK.Options: openai-go and anthropic-sdk-go have the same option
// functions), an Attempt that watches the one HTTP
// exchange of a Generate call, and the rules that turn its failure into a
// *loop.ModelError (status, type, retryable, Retry-After).
//
// A provider makes one attempt per call, with the SDK's retries off:
//
//	var at modelhttp.Attempt
//	reply, err := client.Chat.Completions.New(ctx, params, option.WithMiddleware(at.Middleware))
//	if err != nil {
//		return nil, at.Failure(ctx, "openai", err, parseOpenAIError)
//	}
//
// The rules are written down in docs/AGENTS.md, "Models and providers".
package modelhttp
