package interceptors

import (
	"encoding/json"
	"fmt"

	"github.com/hookbus/hookbus/events"
)

// RecordedResult is what a chain decided on an event, read back from the
// record of the call that ended it: d is that call's hook.decided (deny,
// mock, stop, ask or continue). It is the ChainResult that Run returned
// then, without what the record keeps elsewhere (the payload, which the
// stored event holds, and the other calls' records): the decision, the
// plugin, the reason (one naming the plugin when it gave none, as Run
// gives it), a mock's tool result and the text for the model. A resumed
// run acts on it as on a live result.
func RecordedResult(d *events.HookDecided) *ChainResult {
	k := Kind(d.Decision)
	out := &ChainResult{Stage: d.Stage, EventID: d.EventID, Decision: k, Plugin: d.Plugin, Reason: d.Reason, Mock: d.Result}
	msg := d.Context
	if k == Continue && msg == "" {
		msg = d.Reason // the message that forces another step
	}
	if msg != "" {
		out.Context = []string{msg}
	}
	if out.Reason == "" {
		out.Reason = defaultReason(k, d.Plugin)
	}
	return out
}

// RecordedFailure is what a chain decided on an event whose call failed
// closed (policy fail), read back from the call's hook.failed: deny, or
// stop where the stage accepts no deny (ClosedKind), with ClosedReason.
func RecordedFailure(f *events.HookFailed) *ChainResult {
	return &ChainResult{Stage: f.Stage, EventID: f.EventID, Decision: ClosedKind(f.Stage), Plugin: f.Plugin, Reason: ClosedReason(f.Kind)}
}

// ResultData decodes the payload a chain left (r.Data) as T, the payload
// type of r's stage: ResultData[events.ToolBefore](r) for a tool.before.
// The error wraps events.ErrPayload and names the stage when the data does
// not decode.
func ResultData[T any](r *ChainResult) (T, error) {
	var v T
	if err := json.Unmarshal(r.Data, &v); err != nil {
		return v, fmt.Errorf("%w: %s outcome data: %v", events.ErrPayload, r.Stage, err)
	}
	return v, nil
}
