package backtest

import (
	"time"

	"github.com/hookbus/hookbus/events"
)

// Report is what a backtest found.
type Report struct {
	Stage  events.Stage `json:"stage"`
	Plugin string       `json:"plugin"`
	// Scanned counts the events of the stage read; Sent those sent to the
	// candidate; Differ those it decided differently on.
	Scanned int `json:"scanned"`
	Sent    int `json:"sent"`
	Differ  int `json:"differ"`
	// NotMatched counts the events the candidate's registration does not
	// match (its tool, kind or agent filter): not sent.
	NotMatched int `json:"not_matched"`
	// NotReconstructible counts the events whose input to the candidate
	// the record does not hold (not sent).
	NotReconstructible int `json:"not_reconstructible"`
	// Failed counts the candidate's failed calls.
	Failed int `json:"candidate_failures"`
	// Differences are the events it decided differently on, in the order
	// read.
	Differences []Difference `json:"differences"`
}

// Difference is one event where the candidate decided differently from
// what was recorded.
type Difference struct {
	EventID string    `json:"event_id"`
	Time    time.Time `json:"time"`
	Agent   string    `json:"agent"`
	Session string    `json:"session"`
	Run     string    `json:"run"`
	Subject string    `json:"subject,omitempty"`
	// Recorded is the decision recorded (the candidate's own when it was
	// called, else the chain's outcome), RecordedBy the interceptor that
	// gave it ("" for the chain's allow).
	Recorded   string `json:"recorded"`
	RecordedBy string `json:"recorded_by,omitempty"`
	// Candidate is the candidate's decision ("failed:<kind>" when its call
	// failed), Reason its reason or error.
	Candidate string `json:"candidate"`
	Reason    string `json:"reason,omitempty"`
}
