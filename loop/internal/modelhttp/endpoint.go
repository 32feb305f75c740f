package modelhttp

import (
	"fmt"
	"os"
	"strings"
)

// Endpoint is where a provider sends its requests when its Config does not
// say, and how its Config is checked: what differs between the HTTP
// providers, as data.
type Endpoint struct {
	// BaseURL is the provider's own endpoint, the default.
	BaseURL string
	// BaseURLEnv and APIKeyEnv are the environment variables read for a
	// Config's empty BaseURL and APIKey (OPENAI_BASE_URL, OPENAI_API_KEY).
	BaseURLEnv, APIKeyEnv string
	// Invalid is what the error of a refused Config wraps: the provider's
	// ErrInvalidConfig.
	Invalid error
}

// Resolve checks a provider's Config and fills its endpoint: model must be
// named; an empty *baseURL is read from BaseURLEnv, else is e.BaseURL; an
// empty *apiKey is read from APIKeyEnv, and may stay empty only for a base
// URL other than the provider's own (Ollama's needs none, a proxy may add
// its own); maxTokens must not be negative. An error wraps e.Invalid and
// says what is wrong.
func (e Endpoint) Resolve(model string, baseURL, apiKey *string, maxTokens int) error {
	if strings.TrimSpace(model) == "" {
		return fmt.Errorf("%w: no model name", e.Invalid)
	}
	if *baseURL == "" {
		*baseURL = os.Getenv(e.BaseURLEnv)
	}
	if *baseURL == "" {
		*baseURL = e.BaseURL
	}
	if *apiKey == "" {
		*apiKey = os.Getenv(e.APIKeyEnv)
	}
	if *apiKey == "" && strings.TrimRight(*baseURL, "/") == e.BaseURL {
		return fmt.Errorf("%w: no API key for %s (set %s)", e.Invalid, e.BaseURL, e.APIKeyEnv)
	}
	if maxTokens < 0 {
		return fmt.Errorf("%w: MaxTokens %d is negative", e.Invalid, maxTokens)
	}
	return nil
}
