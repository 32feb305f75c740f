package events

import (
	"slices"
	"strings"
)

// Decisions is a set of the decisions an interceptor may give (the
// "decision" field of a reply, interceptors.Kind): what a stage accepts
// (Stage.Accepts).
type Decisions uint8

// The decisions, one bit each, in the order they are listed.
const (
	DecisionAllow Decisions = 1 << iota
	DecisionModify
	DecisionDeny
	DecisionMock
	DecisionStop
	DecisionAsk
	DecisionContinue

	// AllDecisions is every decision (keep it after the last one).
	AllDecisions Decisions = 1<<iota - 1
)

// decisionNames are the wire names of the decisions, bit i at index i. It is
// never written.
var decisionNames = [...]string{"allow", "modify", "deny", "mock", "stop", "ask", "continue"}

// DecisionNamed returns the decision whose wire name is name ("deny"), or
// none for a name that is not a decision.
func DecisionNamed(name string) Decisions {
	if i := slices.Index(decisionNames[:], name); i >= 0 {
		return 1 << i
	}
	return 0
}

// Has reports whether d holds every decision of o (and o is not empty).
func (d Decisions) Has(o Decisions) bool { return o != 0 && d&o == o }

// Names returns the wire names of the decisions in d, in the order of the
// constants (allow first).
func (d Decisions) Names() []string {
	var out []string
	for i, n := range decisionNames {
		if d&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// String lists the names, comma-separated ("allow, modify, deny").
func (d Decisions) String() string { return strings.Join(d.Names(), ", ") }
