package openai

import (
	"context"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/internal/modelhttp"
)

// Provider is the name the provider gives in its errors (ModelError.Provider,
// model.failed's provider).
const Provider = "openai"

// DefaultBaseURL is OpenAI's endpoint, used when neither Config.BaseURL nor
// OPENAI_BASE_URL is set.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Model.
type Config struct {
	// Model is the model name sent with each request (required).
	Model string
	// BaseURL is the API's base URL, up to and including /v1. Default:
	// $OPENAI_BASE_URL, else DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token. Default: $OPENAI_API_KEY. It may be
	// empty for a base URL other than OpenAI's (Ollama needs none).
	APIKey string
	// MaxTokens caps the reply's tokens (0: the server's default). It is
	// sent as max_completion_tokens, or max_tokens with LegacyMaxTokens.
	MaxTokens int
	// LegacyMaxTokens sends MaxTokens as max_tokens, for servers that
	// predate max_completion_tokens.
	LegacyMaxTokens bool
	// Temperature, when set, is sent as temperature.
	Temperature *float64
	// HTTPClient makes the requests (default: the SDK's client).
	HTTPClient *http.Client
	// Headers are added to every request.
	Headers map[string]string
}

// Model is a loop.Model on the chat completions API. It is safe for
// concurrent use.
type Model struct {
	cfg    Config
	client sdk.Client
}

var _ loop.Model = (*Model)(nil)

// New returns a Model for cfg, filling BaseURL and APIKey from the
// environment. It does no I/O. An error wraps ErrInvalidConfig.
func New(cfg Config) (*Model, error) {
	ep := modelhttp.Endpoint{BaseURL: DefaultBaseURL, BaseURLEnv: "OPENAI_BASE_URL", APIKeyEnv: "OPENAI_API_KEY", Invalid: ErrInvalidConfig}
	if err := ep.Resolve(cfg.Model, &cfg.BaseURL, &cfg.APIKey, cfg.MaxTokens); err != nil {
		return nil, err
	}
	sdkOptions := modelhttp.SDK[option.RequestOption, option.HTTPClient]{WithBaseURL: option.WithBaseURL, WithAPIKey: option.WithAPIKey,
		WithMaxRetries: option.WithMaxRetries, WithHeader: option.WithHeader, WithHTTPClient: option.WithHTTPClient}
	opts := sdkOptions.Options(modelhttp.Client{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTPClient: cfg.HTTPClient, Headers: cfg.Headers})
	return &Model{cfg: cfg, client: sdk.NewClient(opts...)}, nil
}

// Generate asks the model once. Every failure is a *loop.ModelError.
func (m *Model) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, modelhttp.BadRequest(Provider, err)
	}
	var at modelhttp.Attempt
	c, err := m.client.Chat.Completions.New(ctx, params, option.WithMiddleware(at.Middleware))
	if err != nil {
		return nil, at.Failure(ctx, Provider, err, parseError)
	}
	if len(c.Choices) == 0 {
		return nil, at.BadResponse(Provider, "the answer has no choices")
	}
	return response(c), nil
}
