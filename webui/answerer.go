package webui

import (
	"context"
	"time"

	"github.com/hookbus/hookbus/events"
)

// ChannelWeb is the Identity.Via of an answer given on the page.
const ChannelWeb = "web"

// Identity is who answered and through what: the page's authenticated
// user (never a name typed on the page) and ChannelWeb.
type Identity struct {
	Name string
	Via  string
}

// AnswerInput is one answer to a call waiting for approval.
type AnswerInput struct {
	Run, Agent, Session string
	CallID              string
	// Action is approve, reject or reject_and_continue.
	Action string
	Reason string
	// Comment is the answerer's own note, kept apart from who answered.
	Comment  string
	Identity Identity
}

// Answerer submits an answer; the page waits for the approval.resolved
// carrying the answer id it returns.
type Answerer interface {
	Answer(ctx context.Context, in AnswerInput) (answerID string, err error)
}

// busAnswerer queues answers on the bus as observer approve does, the
// identity's name as the answer's by.
type busAnswerer struct{ bus Bus }

func (a busAnswerer) Answer(ctx context.Context, in AnswerInput) (string, error) {
	ans := events.ApprovalAnswer{CallID: in.CallID, Action: in.Action, By: in.Identity.Name, Reason: in.Reason,
		Comment: in.Comment, AnswerID: events.NewID(), AnsweredAt: time.Now().UTC()}
	if err := a.bus.SubmitAnswer(ctx, in.Agent, in.Session, in.Run, ans); err != nil {
		return "", err
	}
	return ans.AnswerID, nil
}
