package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
)

// ApprovalView is a call that asked for a human (GET /api/approvals).
type ApprovalView struct {
	RunID     string          `json:"run_id"`
	AgentID   string          `json:"agent_id"`
	SessionID string          `json:"session_id"`
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// AskedBy is the hook that asked ("" when the agent's policy did).
	AskedBy     string    `json:"asked_by,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	RequestedAt time.Time `json:"requested_at"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
	OnExpiry    string    `json:"on_expiry,omitempty"`
	// State is waiting, run_ended, or the answer's action.
	State    string                   `json:"state"`
	Resolved *events.ApprovalResolved `json:"resolved,omitempty"`
}

func approvalView(a *audit.Approval) *ApprovalView {
	v := &ApprovalView{RunID: a.RunID, AgentID: a.AgentID, SessionID: a.SessionID, CallID: a.Requested.Call.ID,
		Tool: a.Requested.Call.Name, AskedBy: a.Requested.Plugin, Reason: a.Requested.Reason, RequestedAt: a.RequestedAt,
		ExpiresAt: a.Requested.ExpiresAt, OnExpiry: a.Requested.OnExpiry, State: "waiting", Resolved: a.Resolved}
	if json.Valid(a.Requested.Call.Arguments) {
		v.Arguments = a.Requested.Call.Arguments
	}
	switch {
	case a.Resolved != nil:
		v.State = a.Resolved.Action
	case a.RunEnded:
		v.State = "run_ended"
	}
	return v
}

// AnswerRequest is the body of POST /api/runs/{run}/answer.
type AnswerRequest struct {
	// Action is approve, reject or reject_and_continue.
	Action string `json:"action"`
	// CallID is the call answered; empty answers every call of the run
	// waiting.
	CallID string `json:"call_id,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Comment is a note of the answerer's, recorded apart from who
	// answered (the signed-in identity).
	Comment string `json:"comment,omitempty"`
}

// AnswerResult is the reply of POST /api/runs/{run}/answer.
type AnswerResult struct {
	// Calls are the calls answered.
	Calls []string `json:"calls"`
	// Recorded is true when a worker recorded every answer
	// (approval.resolved) within the wait; false: queued, a worker will.
	Recorded bool   `json:"recorded"`
	Message  string `json:"message"`
}

func (r *AnswerRequest) validate() error {
	if !events.ValidAction(r.Action) {
		return fmt.Errorf("%w: action %q (want approve, reject or reject_and_continue)", ErrBadRequest, r.Action)
	}
	if r.Action != events.ActionApprove && r.Reason == "" {
		return fmt.Errorf("%w: a rejection needs a reason", ErrBadRequest)
	}
	return nil
}

// readApprovals folds the approvals recorded under f.
func (s *Server) readApprovals(ctx context.Context, f bus.Filter) (*audit.Approvals, error) {
	f.Stages = audit.ApprovalStages
	var as audit.Approvals
	_, err := s.scan(ctx, f, func(e *events.Event) { as.Add(e) })
	return &as, err
}

// answer does what observer approve|reject do, as id: it submits the
// answer of every targeted call waiting (Config.Answerer), then waits
// (Config.AnswerWait) for a worker to record them.
func (s *Server) answer(ctx context.Context, run string, f bus.Filter, req AnswerRequest, id Identity) (*AnswerResult, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	f.Run = run
	as, err := s.readApprovals(ctx, f)
	if err != nil {
		return nil, err
	}
	mine := as.Of(run)
	if len(mine) == 0 {
		return nil, fmt.Errorf("%w: run %s has asked for no approval", ErrNotFound, run)
	}
	var targets []*audit.Approval
	for _, a := range mine {
		if req.CallID != "" && a.Requested.Call.ID != req.CallID {
			continue
		}
		switch {
		case a.RunEnded:
			return nil, fmt.Errorf("%w: run %s has ended: it waits for no answer", ErrConflict, run)
		case a.Resolved != nil && req.CallID != "":
			return nil, fmt.Errorf("%w: call %s was answered already: %s by %s", ErrConflict, req.CallID, a.Resolved.Action, a.Resolved.By)
		case a.Resolved == nil:
			targets = append(targets, a)
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: run %s has no call waiting for approval", ErrConflict, run)
	}
	sent := map[string]string{} // call id → answer id
	res := &AnswerResult{}
	for _, a := range targets {
		answerID, err := s.cfg.Answerer.Answer(ctx, AnswerInput{Run: run, Agent: a.AgentID, Session: a.SessionID, CallID: a.Requested.Call.ID,
			Action: req.Action, Reason: req.Reason, Comment: req.Comment, Identity: id})
		if err != nil {
			return nil, err
		}
		sent[a.Requested.Call.ID] = answerID
		res.Calls = append(res.Calls, a.Requested.Call.ID)
	}
	s.log.Info("answer queued", "run", run, "action", req.Action, "by", id.Name, "via", id.Via, "calls", res.Calls)
	deadline := time.Now().Add(s.cfg.AnswerWait)
	for {
		as, err := s.readApprovals(ctx, f)
		if err != nil {
			return nil, err
		}
		done := 0
		for _, a := range as.Of(run) {
			id, ok := sent[a.Requested.Call.ID]
			if !ok || a.Resolved == nil {
				continue
			}
			if a.Resolved.AnswerID != id {
				return nil, fmt.Errorf("%w: call %s was answered by %s first (%s); this answer was refused", ErrConflict, a.Requested.Call.ID, a.Resolved.By, a.Resolved.Action)
			}
			done++
		}
		if done == len(sent) {
			res.Recorded, res.Message = true, fmt.Sprintf("%s recorded for %d call(s)", req.Action, done)
			return res, nil
		}
		if time.Now().After(deadline) {
			res.Message = fmt.Sprintf("%s queued for %d call(s); no worker recorded it within %s: a worker (loop serve) will when it runs", req.Action, len(sent), s.cfg.AnswerWait)
			return res, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
