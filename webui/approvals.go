package webui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/record/approval"
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
	// Suggestions are what the coding agent that asked offers (Claude
	// Code's permission_suggestions), as it sent them.
	Suggestions json.RawMessage `json:"suggestions,omitempty"`
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
	if len(a.Requested.Suggestions) > 0 && json.Valid(a.Requested.Suggestions) {
		v.Suggestions = a.Requested.Suggestions
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
	// Recorded is true when every answer is recorded (approval.resolved,
	// written by the page's server in the run's record).
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

// answer does what observer approve|reject do, as who (the page's
// authenticated user): it records the answer of every targeted call waiting
// in the run's record (recordAnswer).
func (s *Server) answer(ctx context.Context, run string, f bus.Filter, req AnswerRequest, who httpauth.Identity) (*AnswerResult, error) {
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
	actor := events.Actor{Identity: who.Name, Via: who.Method}
	r, err := s.recordAnswer(ctx, actor, approval.Request{AgentID: mine[0].AgentID, SessionID: mine[0].SessionID, RunID: run,
		CallID: req.CallID, Action: req.Action, Reason: req.Reason, Comment: req.Comment})
	res := &AnswerResult{}
	if r != nil {
		for _, a := range r.Resolved {
			res.Calls = append(res.Calls, a.CallID)
		}
	}
	switch {
	case errors.Is(err, approval.ErrBadAnswer), errors.Is(err, approval.ErrRunBusy):
		return nil, fmt.Errorf("%w: %v", ErrConflict, err)
	case errors.Is(err, approval.ErrInvalid):
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	case err != nil:
		return nil, err
	}
	s.log.Info("answer recorded", "run", run, "action", req.Action, "calls", res.Calls)
	res.Recorded, res.Message = true, fmt.Sprintf("%s recorded for %d call(s)", req.Action, len(res.Calls))
	return res, nil
}

// recordAnswer records req in the run's record (approval.Answer), on
// the subject of the page server's NATS user, which vouches for who: the
// page's user (its identity, how the page authenticated it, a note).
func (s *Server) recordAnswer(ctx context.Context, who events.Actor, req approval.Request) (*approval.Result, error) {
	me, err := s.cfg.Bus.WhoAmI(ctx)
	if err != nil {
		return nil, err
	}
	who.Writer, who.Channel = me.User, events.ChannelWeb
	req.By = who
	return approval.Answer(ctx, approval.Deps{History: s.cfg.Bus, Recorder: s.cfg.Bus, Source: "hookbus/webui", Settle: s.cfg.AnswerWait}, req)
}
