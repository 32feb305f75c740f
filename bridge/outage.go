package bridge

import (
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/interceptors"
)

// Outage is the answer to a Claude Code hook input when hookbus cannot
// record or decide it (cause): claudecode.OutageAnswer. Other harnesses'
// inputs answer with their Outage.
func Outage(in *claudecode.Input, policy interceptors.Policy, cause error) *claudecode.Output {
	return claudecode.OutageAnswer(in, policy, cause)
}
