package bridge

import (
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/interceptors"
)

// Outage is the answer to in when hookbus cannot record or decide it
// (cause): with PolicyIgnore the event proceeds, and Claude Code shows the
// user a warning (systemMessage); with PolicyFail it is blocked as a
// fail-closed interceptor blocks it (a denied tool call or prompt, a
// stopped run where the event cannot be denied), the warning too. Events
// that cannot be blocked (observe-only) only get the warning.
func Outage(in *claudecode.Input, policy interceptors.Policy, cause error) *claudecode.Output {
	msg := fmt.Sprintf("hookbus could not record or check this %s event (%v)", in.HookEventName, cause)
	if policy != interceptors.PolicyFail || !in.HookEventName.Intercepts() {
		return &claudecode.Output{SystemMessage: msg + "; it proceeds unchecked"}
	}
	st := in.HookEventName.Stage()
	kind := interceptors.Stop
	if st.Accepts().Has(events.DecisionDeny) {
		kind = interceptors.Deny
	}
	reason := "hookbus is unavailable and its policy is to fail closed: " + cause.Error()
	out, err := claudecode.Answer(in, &interceptors.ChainResult{Stage: st, Decision: kind, Reason: reason}, claudecode.AnswerOptions{})
	if err != nil {
		out = &claudecode.Output{}
	}
	return warn(out, msg+"; blocked (policy fail)")
}
