package main

import (
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/policy"
	"github.com/invopop/jsonschema"
)

// adjustments make precise what reflection leaves vague: the closed sets of
// values of plain string fields, the shape of json.RawMessage fields, and
// the rules of a decision and a patch operation. They change the schema,
// never the JSON the Go types write. Keyed by Go type name.
var adjustments = map[string]func(*jsonschema.Schema){
	"RunCompleted": func(s *jsonschema.Schema) {
		enum(s, "reason", events.ReasonDone, events.ReasonDenied, events.ReasonStopped, events.ReasonRejected,
			events.ReasonMaxSteps, events.ReasonCostLimit, events.ReasonInterrupted, events.ReasonIdle)
	},
	"HookDecided": func(s *jsonschema.Schema) {
		ref(s, "decision", "Kind")
		prop(s, "patch").Type = "array"
		prop(s, "patch").Items = &jsonschema.Schema{Ref: "#/$defs/PatchOp"}
	},
	"PolicyHit": func(s *jsonschema.Schema) {
		enum(s, "mode", string(policy.ModeEnforce), string(policy.ModeWarn), string(policy.ModeAudit))
		enum(s, "action", string(policy.ActionDeny), string(policy.ActionAsk), string(policy.ActionWarn), policy.HitMutate, policy.HitAllow)
	},
	"HookFailed": func(s *jsonschema.Schema) {
		enum(s, "kind", events.FailTimeout, events.FailNoResponders, events.FailBadReply, events.FailError, events.FailPanic)
		ref(s, "policy", "Policy")
		enum(s, "outcome", interceptors.FailedOpen, interceptors.FailedClosed)
	},
	"ApprovalRequested": func(s *jsonschema.Schema) {
		enum(s, "on_expiry", events.ActionApprove, events.ActionReject, events.ActionRejectAndContinue)
	},
	"ApprovalResolved": func(s *jsonschema.Schema) {
		enum(s, "action", events.ActionApprove, events.ActionReject, events.ActionRejectAndContinue)
		enum(s, "channel", events.ChannelCLI, events.ChannelWeb, events.ChannelNATS, events.ChannelExpiry)
	},
	"Registration": func(s *jsonschema.Schema) {
		ref(s, "stage", "InterceptableStage")
		s.Properties.Set("timeout", &jsonschema.Schema{Type: "string", Pattern: goDuration,
			Description: "timeout bounds each call: a Go duration (\"5s\", \"250ms\"), default 5s, at most 30s."})
		registrationRules(s)
	},
	"RunRequest": func(s *jsonschema.Schema) {
		prop(s, "traceparent").Pattern = traceparentPattern
	},
	"Decision":   decisionRules,
	"PatchOp":    patchOpRules,
	"MockResult": func(*jsonschema.Schema) {},
}

// adjust applies the adjustment of the Go type name to s.
func adjust(name string, s *jsonschema.Schema) {
	if fn, ok := adjustments[name]; ok {
		fn(s)
	}
}

func prop(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := s.Properties.Get(name)
	if !ok {
		panic("schemagen: no property " + name)
	}
	return p
}

func enum(s *jsonschema.Schema, name string, values ...string) { prop(s, name).Enum = anys(values) }

func ref(s *jsonschema.Schema, name, def string) {
	p := prop(s, name)
	p.Type, p.Ref = "", "#/$defs/"+def
}

const (
	// goDuration is a Go duration string as time.ParseDuration reads it.
	goDuration = `^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$|^0$`
	// traceparentPattern is a W3C trace context, version 00.
	traceparentPattern = `^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`
	// jsonPointer is an RFC 6901 JSON Pointer.
	jsonPointer = `^(/([^~/]|~[01])*)*$`
)

// registrationRules are Registration.Validate's rules between fields: a
// tools matcher only on the stages whose events name a tool, mode validate
// only on a stage that accepts deny.
func registrationRules(s *jsonschema.Schema) {
	var toolMatched, denying []string
	for _, st := range events.InterceptableStages() {
		if interceptors.ToolMatched(st) {
			toolMatched = append(toolMatched, string(st))
		}
		if st.Accepts().Has(events.DecisionDeny) {
			denying = append(denying, string(st))
		}
	}
	one := uint64(1)
	when := func(name string, v *jsonschema.Schema) *jsonschema.Schema {
		p := jsonschema.NewProperties()
		p.Set(name, v)
		return &jsonschema.Schema{Properties: p, Required: []string{name}}
	}
	s.AllOf = []*jsonschema.Schema{
		{If: when("tools", &jsonschema.Schema{MinLength: &one}), Then: when("stage", &jsonschema.Schema{Enum: anys(toolMatched)})},
		{If: when("mode", &jsonschema.Schema{Const: string(interceptors.ModeValidate)}), Then: when("stage", &jsonschema.Schema{Enum: anys(denying)})},
		{If: when("kinds", &jsonschema.Schema{MinLength: &one}), Then: when("stage", &jsonschema.Schema{Enum: anys([]string{string(events.StageToolBefore), string(events.StageToolAfter)})})},
	}
}

// decisionRules are ParseDecision's consistency rules: modify carries data
// (an object) or a patch, not both; mock carries a tool result in data and
// no patch; continue carries its message in context or reason; the others
// carry neither data nor patch. JSON null data counts as absent.
func decisionRules(s *jsonschema.Schema) {
	is := func(kinds ...interceptors.Kind) *jsonschema.Schema {
		names := make([]string, len(kinds))
		for i, k := range kinds {
			names[i] = string(k)
		}
		p := jsonschema.NewProperties()
		p.Set("decision", &jsonschema.Schema{Enum: anys(names)})
		return &jsonschema.Schema{Properties: p, Required: []string{"decision"}}
	}
	props := func(name string, s *jsonschema.Schema) *jsonschema.Schema {
		p := jsonschema.NewProperties()
		p.Set(name, s)
		return &jsonschema.Schema{Properties: p, Required: []string{name}}
	}
	noPatch := &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{"patch"}}}
	nonEmpty := uint64(1)
	data := prop(s, "data")
	data.Type = ""
	data.AnyOf = []*jsonschema.Schema{{Type: "object"}, {Type: "null"}}
	s.AllOf = []*jsonschema.Schema{
		{If: is(interceptors.Modify), Then: &jsonschema.Schema{OneOf: []*jsonschema.Schema{
			{AllOf: []*jsonschema.Schema{props("data", &jsonschema.Schema{Type: "object"}), noPatch}},
			{AllOf: []*jsonschema.Schema{{Required: []string{"patch"}}, {Not: props("data", &jsonschema.Schema{Type: "object"})}}},
		}}},
		{If: is(interceptors.Mock), Then: &jsonschema.Schema{AllOf: []*jsonschema.Schema{
			props("data", &jsonschema.Schema{Ref: "#/$defs/MockResult"}), noPatch,
		}}},
		{If: is(interceptors.Continue), Then: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
			props("context", &jsonschema.Schema{MinLength: &nonEmpty}),
			props("reason", &jsonschema.Schema{MinLength: &nonEmpty}),
		}}},
		{If: is(interceptors.Allow, interceptors.Deny, interceptors.Stop, interceptors.Ask, interceptors.Continue), Then: &jsonschema.Schema{
			AllOf: []*jsonschema.Schema{noPatch, {Not: props("data", &jsonschema.Schema{Not: &jsonschema.Schema{Type: "null"}})}},
		}},
	}
}

// patchOpRules are checkPatch's: a known op, JSON Pointer paths, value for
// add, replace and test, from for move and copy.
func patchOpRules(s *jsonschema.Schema) {
	enum(s, "op", "add", "remove", "replace", "move", "copy", "test")
	prop(s, "path").Pattern = jsonPointer
	prop(s, "from").Pattern = jsonPointer
	op := func(ops ...string) *jsonschema.Schema {
		p := jsonschema.NewProperties()
		p.Set("op", &jsonschema.Schema{Enum: anys(ops)})
		return &jsonschema.Schema{Properties: p}
	}
	s.AllOf = []*jsonschema.Schema{
		{If: op("add", "replace", "test"), Then: &jsonschema.Schema{Required: []string{"value"}}},
		{If: op("move", "copy"), Then: &jsonschema.Schema{Required: []string{"from"}}},
	}
}
