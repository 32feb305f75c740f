package loop

import (
	"context"

	"github.com/hookbus/hookbus/events"
)

// Model is a language model: given the conversation and the tools, it
// replies with a message that may ask for tool calls.
type Model interface {
	Generate(ctx context.Context, req *ModelRequest) (*ModelResponse, error)
}

// ModelRequest is what the model is asked on one step.
type ModelRequest struct {
	AgentID  string
	RunID    string
	Step     int
	Messages []events.Message
	Tools    []events.ToolSpec
	// Purpose is "" for a step of the run, PurposeCompact for the
	// summary of a compaction (no tools then).
	Purpose string
}

// PurposeCompact is ModelRequest.Purpose for a compaction's summary.
const PurposeCompact = "compact"

// ModelResponse is the model's reply.
type ModelResponse struct {
	Message      events.Message
	Usage        events.Usage
	FinishReason string
	Model        string
	// Provider names the provider ("openai", "anthropic", ...): the
	// OpenTelemetry gen_ai.provider.name of the call.
	Provider string
}
