package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ApprovalMessage is the JSON body of a message on
// <prefix>.approval.<agent>: an answer to one of the run's tool calls
// waiting for approval (see docs/PROTOCOL.md, "Approvals").
type ApprovalMessage struct {
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	events.ApprovalAnswer
}

// SubmitAnswer queues an answer to a run's approval on
// <prefix>.approval.<agent>, with Nats-Msg-Id = the answer id (a retried
// submission is queued once), and returns once JetStream stored it. A
// worker records it as approval.resolved and resumes the run. It returns an
// error wrapping events.ErrInvalidID or events.ErrPayload for a bad answer,
// ErrPublish, or ctx's error.
func (b *Bus) SubmitAnswer(ctx context.Context, agent, session, run string, a events.ApprovalAnswer) error {
	req := events.RunRequest{RunID: run, AgentID: agent, SessionID: session, Answer: &a}
	if err := req.Validate(); err != nil {
		return err
	}
	subject, err := b.subj.Approval(agent)
	if err != nil {
		return err
	}
	body, err := json.Marshal(ApprovalMessage{RunID: run, SessionID: session, ApprovalAnswer: a})
	if err != nil {
		return fmt.Errorf("%w: answer %s: %v", events.ErrPayload, a.AnswerID, err)
	}
	msg := &nats.Msg{Subject: subject, Header: nats.Header{jetstream.MsgIDHeader: []string{a.AnswerID}}, Data: body}
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	if _, err := b.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("%w: answer %s: %w", ErrPublish, a.AnswerID, ctxErr(ctx, err))
	}
	return nil
}

// WakeAt schedules req (a run's expiry: an answer with action "expire") to
// be delivered to the workers at t, as a JetStream message schedule on
// <prefix>.wake.<agent>.<run> targeting <prefix>.approval.<agent>. A later
// WakeAt of the same run replaces the earlier. Schedules fire to the
// second. It returns an error wrapping ErrPublish or events' errors.
func (b *Bus) WakeAt(ctx context.Context, req *events.RunRequest, at time.Time) error {
	if req == nil || req.Answer == nil {
		return fmt.Errorf("%w: wake-up without an answer", events.ErrPayload)
	}
	if err := req.Validate(); err != nil {
		return err
	}
	subject, err := b.subj.Wake(req.AgentID, req.RunID)
	if err != nil {
		return err
	}
	target, err := b.subj.Approval(req.AgentID)
	if err != nil {
		return err
	}
	body, err := json.Marshal(ApprovalMessage{RunID: req.RunID, SessionID: req.SessionID, ApprovalAnswer: *req.Answer})
	if err != nil {
		return fmt.Errorf("%w: %v", events.ErrPayload, err)
	}
	at = at.UTC().Truncate(time.Second).Add(time.Second) // never before t
	msg := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{
		"Nats-Schedule":        []string{"@at " + at.Format(time.RFC3339)},
		"Nats-Schedule-Target": []string{target},
	}}
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	if _, err := b.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("%w: wake-up of run %s at %s: %w", ErrPublish, req.RunID, at.Format(time.RFC3339), ctxErr(ctx, err))
	}
	return nil
}

// decodeApproval reads a message of an approval subject as the run request
// that resumes its run with the answer.
func decodeApproval(agent string, body []byte) (*events.RunRequest, error) {
	var m ApprovalMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: approval answer: %v", events.ErrPayload, err)
	}
	a := m.ApprovalAnswer
	req := &events.RunRequest{RunID: m.RunID, AgentID: agent, SessionID: m.SessionID, Answer: &a, SubmittedAt: a.AnsweredAt}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return req, nil
}
