package audit

import (
	"fmt"

	"github.com/hookbus/hookbus/events"
)

// ProblemIdentity: an answer to an approval whose record does not bind who
// it names to the NATS user that wrote it (events.Actor.CheckWriter): an
// identity other than its writer's, a person's answer on the plain subject
// (which only workers write), or an expiry on a person's subject.
const ProblemIdentity = "identity"

// identityProblem says what is wrong with the identity e records, or "".
func identityProblem(e *events.Event) string {
	if e.Stage != events.StageApprovalResolved {
		return ""
	}
	p, err := events.Data[events.ApprovalResolved](e)
	if err != nil {
		return "" // its hash is checked; what it says cannot be read
	}
	if err := p.Actor.CheckWriter(e.Writer); err != nil {
		return fmt.Sprintf("approval.resolved of call %s %v", p.CallID, err)
	}
	return ""
}
