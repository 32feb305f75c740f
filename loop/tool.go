package loop

import (
	"context"
	"encoding/json"

	"github.com/hookbus/hookbus/events"
)

// Tool is something the model can call.
type Tool interface {
	// Spec describes the tool to the model; Spec().Name is its identity.
	Spec() events.ToolSpec
	// Call runs the tool. An error is reported to the model as the tool's
	// result and published as tool.failed.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// ToolFunc makes a Tool of a spec and a function.
func ToolFunc(spec events.ToolSpec, fn func(ctx context.Context, args json.RawMessage) (string, error)) Tool {
	return funcTool{spec: spec, fn: fn}
}

type funcTool struct {
	spec events.ToolSpec
	fn   func(ctx context.Context, args json.RawMessage) (string, error)
}

func (t funcTool) Spec() events.ToolSpec { return t.spec }
func (t funcTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.fn(ctx, args)
}
