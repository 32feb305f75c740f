package policy

import (
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
)

// The CEL view of what a policy reads. Field names are those of the
// events' JSON (docs/POLICIES.md lists them); a field not listed is a type
// error at Compile.

// eventVar is the CEL type hookbus.Event: the event being decided.
type eventVar struct {
	Stage   string    `cel:"stage"`
	ID      string    `cel:"id"`
	Source  string    `cel:"source"`
	Agent   string    `cel:"agent"`
	Session string    `cel:"session"`
	Run     string    `cel:"run"`
	Step    int64     `cel:"step"`
	Subject string    `cel:"subject"`
	Time    time.Time `cel:"time"`
}

// callVar is the CEL type hookbus.Call: the tool call (events.ToolCall),
// its arguments as a map.
type callVar struct {
	ID        string         `cel:"id"`
	Name      string         `cel:"name"`
	Arguments map[string]any `cel:"arguments"`
}

// actionVar is the CEL type hookbus.Action: the call normalized
// (events.Action).
type actionVar struct {
	Kind    string   `cel:"kind"`
	Command string   `cel:"command"`
	Paths   []string `cel:"paths"`
	URL     string   `cel:"url"`
	Query   string   `cel:"query"`
	Server  string   `cel:"server"`
	MCPTool string   `cel:"mcp_tool"`
}

// The names CEL expressions read.
const (
	varEvent     = "event"
	varCall      = "call"
	varAction    = "action"
	varPayload   = "payload"
	varAgent     = "agent"
	varSession   = "session"
	varRun       = "run"
	varHarness   = "harness"
	varIdentity  = "identity"
	prefixVar    = "variables."
	prefixCount  = "counters."
	fnCount      = "count"
	fnSeen       = "seen"
	overCount    = "session_count_string_duration"
	overSeen     = "session_seen_string_string"
	historyCost  = 100 // the estimated cost of one history call
	maxStrSize   = 16 << 10
	maxPathSize  = 1 << 10
	maxListSize  = 64
	maxValueSize = 256
)

// baseEnv is the environment every expression of a policy is checked in
// (variables and counters are added per policy).
func baseEnv() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(
			types.NativeTypeFor[eventVar](types.NativeTypeAlias("hookbus.Event"), types.ParseStructTags(true)),
			types.NativeTypeFor[callVar](types.NativeTypeAlias("hookbus.Call"), types.ParseStructTags(true)),
			types.NativeTypeFor[actionVar](types.NativeTypeAlias("hookbus.Action"), types.ParseStructTags(true)),
		),
		cel.Variable(varEvent, cel.ObjectType("hookbus.Event")),
		cel.Variable(varCall, cel.ObjectType("hookbus.Call")),
		cel.Variable(varAction, cel.ObjectType("hookbus.Action")),
		cel.Variable(varPayload, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varAgent, cel.StringType),
		cel.Variable(varSession, cel.StringType),
		cel.Variable(varRun, cel.StringType),
		cel.Variable(varHarness, cel.StringType),
		cel.Variable(varIdentity, cel.StringType),
		cel.Function(fnCount, cel.MemberOverload(overCount,
			[]*cel.Type{cel.StringType, cel.StringType, cel.DurationType}, cel.IntType, cel.LateFunctionBinding())),
		cel.Function(fnSeen, cel.MemberOverload(overSeen,
			[]*cel.Type{cel.StringType, cel.StringType, cel.StringType}, cel.BoolType, cel.LateFunctionBinding())),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Lists(),
		ext.Sets(),
		ext.Math(),
	)
}

// sizes bounds what the inputs hold, for the cost estimate (the run-time
// limit counts what they do hold).
type sizes struct{}

func (sizes) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	s := func(max uint64) *cost.SizeEstimate { e := cost.RangedSizeEstimate(0, max); return &e }
	p := n.Path()
	if len(p) == 0 {
		// A value inside the input reached by index (call.arguments.x[1]):
		// no larger than the input's largest value.
		if t := n.Type(); t != nil {
			switch t.Kind() {
			case types.DynKind, types.StringKind, types.BytesKind, types.ListKind, types.MapKind:
				return s(maxStrSize)
			}
		}
		return nil
	}
	last := p[len(p)-1]
	switch {
	case len(p) == 2 && p[0] == varAction && p[1] == "paths":
		return s(maxListSize)
	case len(p) == 3 && p[0] == varAction && p[1] == "paths":
		return s(maxPathSize)
	case len(p) >= 2 && (p[0] == varPayload || p[0] == varCall) && (last == "@keys" || last == "@values" || last == "@items"):
		return s(maxValueSize)
	}
	if t := n.Type(); t != nil {
		switch t.Kind() {
		case types.StringKind, types.BytesKind, types.DynKind:
			return s(maxStrSize)
		case types.ListKind, types.MapKind:
			return s(maxValueSize)
		}
	}
	return nil
}

func (sizes) EstimateCallCost(function, overloadID string, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
	switch overloadID {
	case overCount, overSeen:
		return &cost.CallEstimate{CostEstimate: cost.FixedCostEstimate(historyCost)}
	}
	return nil
}
