package anthropic

import "errors"

var (
	// ErrConfig is returned by New for a Config it cannot use: no model, no
	// API key for Anthropic's own endpoint, a MaxTokens the SDK refuses
	// without streaming.
	ErrConfig = errors.New("anthropic: bad config")
	// ErrRequest is wrapped by the *loop.ModelError (type "bad_request")
	// of a request that cannot be expressed in the API: an unknown role, a
	// tool message without a tool_call_id, tool parameters that are not a
	// JSON object.
	ErrRequest = errors.New("anthropic: bad request")
)
