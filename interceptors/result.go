package interceptors

import (
	"encoding/json"
	"time"

	"github.com/hookbus/hookbus/events"
)

// ChainResult is what a chain decided on one event. The input event is never
// modified: Data is the payload to go on with.
type ChainResult struct {
	Stage   events.Stage
	EventID string
	// Decision is the final decision: the one that ended the chain (deny,
	// mock, stop, ask, continue), deny when a validating interceptor denied,
	// deny (stop where the stage accepts no deny) when an interceptor with
	// policy fail failed, else modify when any interceptor changed the
	// payload, else allow. It is always one of StageKinds(Stage).
	Decision Kind
	// Data is the payload as the interceptors left it (the input's when
	// none modified it).
	Data json.RawMessage
	// Reason says why the chain ended (empty for allow and modify); it names
	// the plugin when the interceptor gave none.
	Reason string
	// Context holds the text interceptors added for the model, in call
	// order: tool.after context, and the message of a continue.
	Context []string
	// Mock is the tool result of a mock decision (Mocked set; CallID and
	// Name from the tool.before payload).
	Mock *events.ToolResult
	// Plugin is the plugin whose decision or failure ended the chain.
	Plugin string
	// Records has one entry per interceptor called, in call order
	// (validating interceptors, called in parallel, in their run order),
	// and one per call skipped because its plugin is disabled (Decision
	// Skipped).
	Records []CallRecord
	// Shadow, when not nil, starts the shadow registrations that matched
	// the event, in the background, on the payload as the chain left it
	// and under eventID (the id the event is stored with); their records go
	// to the chain's ShadowSink. Call it once, after storing the event.
	Shadow func(eventID string) `json:"-"`
}

// CallRecord is one interceptor call, for the audit trail: Audit turns it into
// a hook.decided or hook.failed payload.
type CallRecord struct {
	Plugin  string
	Stage   events.Stage
	EventID string
	Mode    Mode
	Remote  bool
	// Decision is what the interceptor decided; empty when it failed.
	Decision Kind
	Reason   string
	Latency  time.Duration
	// Patch is what the interceptor changed, as RFC 6902 operations: the
	// patch it sent, or the difference its replacement data made.
	Patch       []PatchOp
	Warnings    []string
	Annotations map[string]string
	// Context is the text the interceptor added for the model (tool.after
	// context, the message of a continue).
	Context string
	// Mock is the tool result a mock decision gave (Mocked set).
	Mock *events.ToolResult
	// Failure is set when the call failed (timeout, error, panic, no
	// responders, bad reply).
	Failure *CallFailure
	// Shadow marks the call of a shadow registration: recorded, never
	// applied.
	Shadow bool
	// Policy is the policy hit the decision carried (Decision.Policy).
	Policy *events.PolicyHit
}

// Audit returns the stage and payload of the audit event that records r:
// hook.failed with an events.HookFailed when r failed, else hook.decided
// with an events.HookDecided.
//
//	st, p := rec.Audit()
//	e, err := events.New(st, meta, p)
func (r *CallRecord) Audit() (events.Stage, any) {
	if r.Failure != nil {
		return events.StageHookFailed, r.HookFailed()
	}
	return events.StageHookDecided, r.HookDecided()
}

// HookDecided is r as an events.HookDecided payload.
func (r *CallRecord) HookDecided() events.HookDecided {
	d := events.HookDecided{
		Plugin: r.Plugin, Stage: r.Stage, Decision: string(r.Decision), Reason: r.Reason,
		LatencyUS: r.Latency.Microseconds(), Remote: r.Remote, Warnings: r.Warnings,
		Annotations: r.Annotations, EventID: r.EventID, Result: r.Mock, Context: r.Context, Shadow: r.Shadow,
		Policy: r.Policy,
	}
	if r.Patch != nil {
		d.Patch, _ = json.Marshal(r.Patch) // PatchOps always marshal
	}
	return d
}

// HookFailed is r as an events.HookFailed payload; the zero value when r
// did not fail.
func (r *CallRecord) HookFailed() events.HookFailed {
	if r.Failure == nil {
		return events.HookFailed{}
	}
	f := events.HookFailed{
		Plugin: r.Plugin, Stage: r.Stage, Kind: r.Failure.Kind, Policy: string(r.Failure.Policy),
		Outcome: r.Failure.Outcome, LatencyUS: r.Latency.Microseconds(), EventID: r.EventID,
	}
	if r.Failure.Err != nil {
		f.Error = r.Failure.Err.Error()
	}
	return f
}

// policyOf is the policy hit a call's record keeps: the decision's, from
// an in-process interceptor only (a remote one cannot speak for a policy).
func policyOf(reg *Registration, d *Decision) *events.PolicyHit {
	if reg.Remote {
		return nil
	}
	return d.Policy
}
