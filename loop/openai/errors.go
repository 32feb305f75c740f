package openai

import "errors"

var (
	// ErrInvalidConfig is returned by New for a Config it cannot use: no
	// model, no API key for OpenAI's own endpoint, a negative MaxTokens.
	ErrInvalidConfig = errors.New("openai: invalid config")
	// ErrConfig is ErrInvalidConfig.
	//
	// Deprecated: use ErrInvalidConfig.
	ErrConfig = ErrInvalidConfig
	// ErrRequest is wrapped by the *loop.ModelError (type "bad_request")
	// of a request that cannot be expressed in the API: an unknown role, a
	// tool message without a tool_call_id, tool parameters that are not a
	// JSON object.
	ErrRequest = errors.New("openai: bad request")
)
