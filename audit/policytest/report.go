package policytest

import (
	"time"

	"github.com/hookbus/hookbus/events"
)

// FlipKind says how a call's outcome would change.
type FlipKind string

// The kinds of flips.
const (
	// FlipDenied: the policy would deny a call that went through (or was
	// rewritten, mocked, sent to a person).
	FlipDenied FlipKind = "denied"
	// FlipAllowed: the policy would let through a call its recorded
	// decision (an earlier version enforced) denied, rewrote or sent to a
	// person.
	FlipAllowed FlipKind = "allowed"
	// FlipRewritten: the policy would rewrite the call (a mutation).
	FlipRewritten FlipKind = "rewritten"
	// FlipAsked: the policy would send the call to a person (an ask
	// validation).
	FlipAsked FlipKind = "asked"
	// FlipFailed: the policy's evaluation would fail on the call (its
	// failure policy then decides: fail denies).
	FlipFailed FlipKind = "failed"
)

// Report is what a test found: one PolicyReport per policy of the file,
// in its order.
type Report struct {
	// Time is when the test ran; Since, Agent and Harness what it read
	// (zero, "": everything).
	Time    time.Time `json:"time"`
	Since   time.Time `json:"since,omitzero"`
	Agent   string    `json:"agent,omitempty"`
	Harness string    `json:"harness,omitempty"`
	// Events counts the events read.
	Events   int             `json:"events"`
	Policies []*PolicyReport `json:"policies"`
}

// Flips counts the flips of every policy.
func (r *Report) Flips() int {
	n := 0
	for _, p := range r.Policies {
		n += len(p.Flips)
	}
	return n
}

// PolicyReport is what one policy would change.
type PolicyReport struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Mode and Rollout are the policy's as written: the test enforces it
	// everywhere, and each flip says whether they would (Flip.Enforced).
	Mode    string `json:"mode"`
	Rollout int    `json:"rollout"`
	// Plugin is the name the chain records its decisions under.
	Plugin string `json:"plugin"`
	// Calls counts the events of the policy's stages read; Sent those
	// the chain called it on (its agents, kinds and tools matched, its
	// input rebuilt); Matched those it applied to (its harnesses and
	// match conditions too); NotReconstructible those whose input the
	// record does not hold (not sent); Failed its failed evaluations.
	Calls              int `json:"calls"`
	Sent               int `json:"sent"`
	Matched            int `json:"matched"`
	NotReconstructible int `json:"not_reconstructible"`
	Failed             int `json:"failed"`
	// Counts are the flips per agent and harness, sorted by agent then
	// harness.
	Counts []Count `json:"counts"`
	// Flips are the calls whose outcome would change, in the order read.
	Flips []Flip `json:"flips"`
}

// Count is the flips of one agent on one harness.
type Count struct {
	Agent   string `json:"agent"`
	Harness string `json:"harness"`
	// Calls counts the agent's calls on the harness the policy applied to.
	Calls     int `json:"calls"`
	Denied    int `json:"denied"`
	Allowed   int `json:"allowed"`
	Rewritten int `json:"rewritten"`
	Asked     int `json:"asked"`
	Failed    int `json:"failed"`
}

// Total is the count's flips.
func (c Count) Total() int { return c.Denied + c.Allowed + c.Rewritten + c.Asked + c.Failed }

func (c *Count) add(k FlipKind) {
	switch k {
	case FlipDenied:
		c.Denied++
	case FlipAllowed:
		c.Allowed++
	case FlipRewritten:
		c.Rewritten++
	case FlipAsked:
		c.Asked++
	case FlipFailed:
		c.Failed++
	}
}

// Flip is one call whose outcome would change.
type Flip struct {
	Kind FlipKind `json:"kind"`
	// The call: its event, its place in the record, and the tool call it
	// carries (CallID, Tool: its native name; Action: normalized).
	EventID string         `json:"event_id"`
	Stage   events.Stage   `json:"stage"`
	Time    time.Time      `json:"time"`
	Agent   string         `json:"agent"`
	Harness string         `json:"harness"`
	Session string         `json:"session"`
	Run     string         `json:"run"`
	CallID  string         `json:"call_id,omitempty"`
	Tool    string         `json:"tool,omitempty"`
	Action  *events.Action `json:"action,omitempty"`
	// Recorded is the outcome the record holds (RecordedBy: who gave it,
	// "" for the chain's allow); Decision what the policy decides, with
	// the rule that decided (Rule) and its message.
	Recorded   string `json:"recorded"`
	RecordedBy string `json:"recorded_by,omitempty"`
	Decision   string `json:"decision"`
	Rule       string `json:"rule,omitempty"`
	Message    string `json:"message,omitempty"`
	// Enforced says whether the policy as written (its mode and rollout)
	// would enforce the decision in this session; false: it would only be
	// recorded (audit, warn, or a session outside the rollout).
	Enforced bool `json:"enforced"`
}
