package modelhttp

import "net/http"

// SDK is the option functions of a provider's SDK (openai-go's and
// anthropic-sdk-go's option packages have the same ones): O is its
// RequestOption, H its HTTPClient.
type SDK[O, H any] struct {
	WithBaseURL    func(string) O
	WithAPIKey     func(string) O
	WithMaxRetries func(int) O
	WithHeader     func(key, value string) O
	WithHTTPClient func(H) O
}

// Client is where and how a provider's requests go, as its Config says
// once its endpoint is resolved (Endpoint.Resolve).
type Client struct {
	BaseURL, APIKey string
	HTTPClient      *http.Client
	Headers         map[string]string
}

// Options are the SDK's request options for c: its base URL, no retries of
// the SDK's own (the engine retries a model call), the API key and the
// HTTP client when set, the headers, then more.
func (s SDK[O, H]) Options(c Client, more ...O) []O {
	opts := []O{s.WithBaseURL(c.BaseURL), s.WithMaxRetries(0)}
	if c.APIKey != "" {
		opts = append(opts, s.WithAPIKey(c.APIKey))
	}
	if c.HTTPClient != nil {
		if hc, ok := any(c.HTTPClient).(H); ok {
			opts = append(opts, s.WithHTTPClient(hc))
		}
	}
	for k, v := range c.Headers {
		opts = append(opts, s.WithHeader(k, v))
	}
	return append(opts, more...)
}
