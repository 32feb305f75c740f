package policy

import (
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Mode says whether a policy's decisions are applied.
type Mode string

// The modes.
const (
	// ModeEnforce (the default) applies the policy's decisions.
	ModeEnforce Mode = "enforce"
	// ModeWarn records the policy's decisions and lets the call through,
	// with the message as a warning.
	ModeWarn Mode = "warn"
	// ModeAudit records the policy's decisions as shadow decisions (called
	// after the chain, never applied).
	ModeAudit Mode = "audit"
)

// Action is what a failed validation does.
type Action string

// The actions.
const (
	// ActionDeny (the default) refuses the call with the message.
	ActionDeny Action = "deny"
	// ActionAsk asks a person through the durable approval, with the
	// message as the question (tool.before only).
	ActionAsk Action = "ask"
	// ActionWarn lets the call through with the message as a warning.
	ActionWarn Action = "warn"
)

// Defaults of a policy document.
const (
	// DefaultRollout is the rollout of a policy that names none: every
	// session.
	DefaultRollout = 100
	// DefaultFailurePolicy is what an evaluation error does when the
	// policy does not say: fail closed.
	DefaultFailurePolicy = interceptors.PolicyFail
)

// Spec is a policy document as decoded, defaults applied. Its YAML and
// JSON names are those of the file format (docs/POLICIES.md).
type Spec struct {
	// Mode is enforce, warn or audit.
	Mode Mode `yaml:"mode" json:"mode"`
	// Rollout is the percentage of sessions in which the policy is
	// enforced (0 to 100); in the others it is audited. A session's place
	// is stable: a hash of the policy's name and the session id.
	Rollout int `yaml:"rollout" json:"rollout"`
	// Order places the policy among the chain's interceptors (lower runs
	// first).
	Order int `yaml:"order" json:"order"`
	// FailurePolicy says what an evaluation error does: fail (deny) or
	// ignore (let the call through; the failure is recorded).
	FailurePolicy interceptors.Policy `yaml:"failurePolicy" json:"failurePolicy"`
	// Match says which events the policy looks at.
	Match Match `yaml:"match" json:"match"`
	// MatchConditions must all hold for the policy to apply.
	MatchConditions []Condition `yaml:"matchConditions" json:"matchConditions,omitempty"`
	// Variables are named expressions, evaluated when first read (as
	// variables.NAME), each able to read those before it.
	Variables []Variable `yaml:"variables" json:"variables,omitempty"`
	// Counters are fleet-wide windows, read as counters.NAME.
	Counters []Counter `yaml:"counters" json:"counters,omitempty"`
	// Validations are the rules: a false expression fails one.
	Validations []Validation `yaml:"validations" json:"validations,omitempty"`
	// Mutations change the payload, each producing an RFC 6902 patch.
	Mutations []Mutation `yaml:"mutations" json:"mutations,omitempty"`
}

// Match narrows a policy to events; an empty list matches anything.
type Match struct {
	// Stages are the stages the policy intercepts (default tool.before).
	Stages []events.Stage `yaml:"stages" json:"stages"`
	// Agents are globs of agent ids (path.Match syntax, or "re:" and a
	// regular expression), as interceptors.Registration.Agents.
	Agents []string `yaml:"agents" json:"agents,omitempty"`
	// Harnesses are who put the call on the bus: hookbus, claude, gemini,
	// codex (events.Harness), or globs of them.
	Harnesses []string `yaml:"harnesses" json:"harnesses,omitempty"`
	// Kinds are action kinds or globs of them ("shell", "file.*").
	Kinds []string `yaml:"kinds" json:"kinds,omitempty"`
	// Tools are globs of native tool names, as
	// interceptors.Registration.Tools.
	Tools []string `yaml:"tools" json:"tools,omitempty"`
}

// Condition is a match condition: a CEL bool.
type Condition struct {
	Name       string `yaml:"name" json:"name"`
	Expression string `yaml:"expression" json:"expression"`
}

// Variable is a named CEL expression read as variables.NAME.
type Variable struct {
	Name       string `yaml:"name" json:"name"`
	Expression string `yaml:"expression" json:"expression"`
}

// Counter is a fleet-wide window: the sum of Value over the calls the
// policy let through within Window, per Key.
type Counter struct {
	// Name is read as counters.NAME (a double: the window's sum before
	// this call).
	Name string `yaml:"name" json:"name"`
	// Key is a CEL string: what the window is counted per (agent, the
	// identity, the harness...).
	Key string `yaml:"key" json:"key"`
	// Value is a CEL number added when the policy lets a call through
	// (default 1).
	Value string `yaml:"value" json:"value,omitempty"`
	// Window is how far back the sum reaches (a Go duration: "1h", "24h").
	Window time.Duration `yaml:"window" json:"window"`
}

// Validation is one rule: its expression must hold.
type Validation struct {
	// Name names the rule (default "validation-N", from 1).
	Name string `yaml:"name" json:"name"`
	// Expression is a CEL bool; false fails the rule.
	Expression string `yaml:"expression" json:"expression"`
	// Message is what a failure says (default: the rule's name and
	// expression).
	Message string `yaml:"message" json:"message,omitempty"`
	// MessageExpression is a CEL string that says it instead, from what
	// the call holds.
	MessageExpression string `yaml:"messageExpression" json:"messageExpression,omitempty"`
	// Reason is a short machine-readable reason, recorded as an annotation
	// ("Forbidden").
	Reason string `yaml:"reason" json:"reason,omitempty"`
	// Action is what a failure does: deny (default), ask or warn.
	Action Action `yaml:"action" json:"action"`
}

// Mutation is a CEL expression producing a list of RFC 6902 operations
// ({"op","path","value"}) applied to the payload; an empty list changes
// nothing.
type Mutation struct {
	Name       string `yaml:"name" json:"name"`
	Expression string `yaml:"expression" json:"expression"`
}
