package policy

import (
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
)

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

// sharedEnv is baseEnv, built once per process: an environment does not
// change once built, and each policy extends it with its own variables
// and counters.
var sharedEnv = sync.OnceValues(baseEnv)

// baseEnv is the environment every expression of a policy is checked in
// (variables and counters are added per policy).
func baseEnv() (*cel.Env, error) {
	return cel.NewEnv(
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
		withObjects(), // last: the libraries above register types of their own
	)
}

// sizes bounds what the inputs hold, for the cost estimate (the run-time
// limit counts what they do hold).
type sizes struct{}

func (sizes) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	s := func(max uint64) *cost.SizeEstimate { e := cost.RangedSizeEstimate(0, max); return &e }
	p := n.Path()
	switch {
	case len(p) == 0:
		// A value reached by index (call.arguments.x[1]): no larger than
		// the input it comes from.
		if t := n.Type(); t != nil {
			switch t.Kind() {
			case types.DynKind, types.StringKind, types.BytesKind, types.ListKind, types.MapKind:
				return s(maxStrSize)
			}
		}
		return nil
	case p[0] == varPayload || p[0] == varCall:
		// Anything in the payload: its JSON is at most maxStrSize bytes
		// on the fast path (inBounds), so no string is longer and no list
		// or map has more entries.
		return s(maxStrSize)
	case p[0] == varAction && len(p) == 2 && p[1] == "paths":
		return s(maxListSize)
	case p[0] == varAction && len(p) == 3 && p[1] == "paths":
		return s(maxPathSize)
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
