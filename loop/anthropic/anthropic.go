package anthropic

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/internal/modelhttp"
)

// Provider is the name the provider gives in its errors (ModelError.Provider,
// model.failed's provider).
const Provider = "anthropic"

// DefaultBaseURL is Anthropic's endpoint, used when neither Config.BaseURL
// nor ANTHROPIC_BASE_URL is set.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is the max_tokens sent when Config.MaxTokens is 0 (the
// API requires one).
const DefaultMaxTokens = 4096

// Config configures a Model.
type Config struct {
	// Model is the model name sent with each request (required).
	Model string
	// BaseURL is the API's base URL, without /v1. Default:
	// $ANTHROPIC_BASE_URL, else DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key. Default: $ANTHROPIC_API_KEY. It may be
	// empty only for a base URL other than Anthropic's (a proxy that adds
	// its own credentials).
	APIKey string
	// MaxTokens caps the reply's tokens (default DefaultMaxTokens).
	MaxTokens int
	// Temperature, when set, is sent as temperature.
	Temperature *float64
	// HTTPClient makes the requests (default: the SDK's client).
	HTTPClient *http.Client
	// Headers are added to every request.
	Headers map[string]string
}

// Model is a loop.Model on the Messages API. It is safe for concurrent use.
type Model struct {
	cfg    Config
	client sdk.Client
}

var _ loop.Model = (*Model)(nil)

// New returns a Model for cfg, filling BaseURL and APIKey from the
// environment (and nothing else: the SDK's profiles and other variables are
// not read). It does no I/O. An error wraps ErrInvalidConfig.
func New(cfg Config) (*Model, error) {
	ep := modelhttp.Endpoint{BaseURL: DefaultBaseURL, BaseURLEnv: "ANTHROPIC_BASE_URL", APIKeyEnv: "ANTHROPIC_API_KEY", Invalid: ErrInvalidConfig}
	if err := ep.Resolve(cfg.Model, &cfg.BaseURL, &cfg.APIKey, cfg.MaxTokens); err != nil {
		return nil, err
	}
	cfg.MaxTokens = cmp.Or(cfg.MaxTokens, DefaultMaxTokens)
	// The SDK refuses, on each call, a non-streaming request whose
	// max_tokens may take longer than 10 minutes: say so now.
	if _, err := sdk.CalculateNonStreamingTimeout(cfg.MaxTokens, sdk.Model(cfg.Model), nil); err != nil {
		return nil, fmt.Errorf("%w: MaxTokens %d: %v", ErrInvalidConfig, cfg.MaxTokens, err)
	}
	sdkOptions := modelhttp.SDK[option.RequestOption, option.HTTPClient]{WithBaseURL: option.WithBaseURL, WithAPIKey: option.WithAPIKey,
		WithMaxRetries: option.WithMaxRetries, WithHeader: option.WithHeader, WithHTTPClient: option.WithHTTPClient}
	opts := sdkOptions.Options(modelhttp.Client{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTPClient: cfg.HTTPClient, Headers: cfg.Headers},
		option.WithoutEnvironmentDefaults())
	return &Model{cfg: cfg, client: sdk.NewClient(opts...)}, nil
}

// Generate asks the model once. Every failure is a *loop.ModelError.
func (m *Model) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	params, err := m.params(req)
	if err != nil {
		return nil, modelhttp.BadRequest(Provider, err)
	}
	var at modelhttp.Attempt
	msg, err := m.client.Messages.New(ctx, params, option.WithMiddleware(at.Middleware))
	if err != nil {
		return nil, at.Failure(ctx, Provider, err, parseError)
	}
	if !msg.JSON.Content.Valid() {
		return nil, at.BadResponse(Provider, "the answer is not a message (no content)")
	}
	return response(msg), nil
}
