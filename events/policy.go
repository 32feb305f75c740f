package events

// PolicyHit is what a policy (docs/POLICIES.md) decided on one event and
// why: it rides on the interceptor's decision into hook.decided, so that
// the record says which policy, which version of it and which rule
// decided, and what the rule saw.
type PolicyHit struct {
	// Name is the policy's name.
	Name string `json:"name"`
	// Version is the policy's version: "sha256:" and the first 16 hex
	// digits of the digest of its canonical form.
	Version string `json:"version"`
	// Rule is the rule that decided (a validation's or mutation's name);
	// empty when every rule held.
	Rule string `json:"rule,omitempty"`
	// Mode is how the policy applied to this event: enforce, warn or
	// audit (a session outside the policy's rollout is audit).
	Mode string `json:"mode"`
	// Action is what the policy decided: deny, ask, warn, mutate or allow.
	Action string `json:"action"`
	// Message is the rule's message.
	Message string `json:"message,omitempty"`
	// Expression is the rule's CEL expression.
	Expression string `json:"expression,omitempty"`
	// Values are the fields and variables the expression read, rendered
	// short, by name ("action.command": "\"rm -rf /\"").
	Values map[string]string `json:"values,omitempty"`
	// Enforced is false when the decision was only recorded: in audit and
	// warn modes and outside the rollout.
	Enforced bool `json:"enforced"`
}
