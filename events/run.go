package events

import (
	"encoding/json"
	"fmt"
	"time"
)

// RunRequest asks a loop worker to run an agent: the JSON body of a message
// on "<prefix>.run.<agent>" (the HOOKBUS_RUNS work queue). Its Nats-Msg-Id is
// the RunID, so a retried submission is queued once.
type RunRequest struct {
	RunID     string            `json:"run_id"`
	AgentID   string            `json:"agent_id"`
	SessionID string            `json:"session_id"`
	Prompt    string            `json:"prompt"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	// MaxSteps overrides the worker's default when positive.
	MaxSteps int `json:"max_steps,omitempty"`
	// Answer, on a message of <prefix>.approval.<agent>, is a human's
	// answer to a call of this run waiting for approval: the worker records
	// it and resumes the run. Prompt is empty then.
	Answer *ApprovalAnswer `json:"answer,omitempty"`
	// Resume asks a worker to go on with a run that exists (a waiting run
	// whose approvals are all answered); Prompt is empty then.
	Resume bool `json:"resume,omitempty"`
	// Compact asks for a run that only compacts the session's conversation
	// (loop compact); Prompt is empty then.
	Compact bool `json:"compact,omitempty"`
	// ParentAgentID, ParentSessionID and ParentRunID name the run that
	// called this one (a sub-agent's run); Depth is how deep it is nested
	// (0 for a run nobody called).
	ParentAgentID   string `json:"parent_agent_id,omitempty"`
	ParentSessionID string `json:"parent_session_id,omitempty"`
	ParentRunID     string `json:"parent_run_id,omitempty"`
	Depth           int    `json:"depth,omitempty"`
	// Budget overrides the agent's budget, field by field, for this run.
	Budget      *Budget   `json:"budget,omitempty"`
	SubmittedAt time.Time `json:"submitted_at"`
	// Traceparent is the caller's W3C trace context: the run continues
	// that trace, its span a child of the caller's (docs/PROTOCOL.md,
	// "Trace context"). Empty: the run's trace is its own.
	Traceparent string `json:"traceparent,omitempty"`
	// Definition, when set, is the digest of the agent definition the run
	// must go on with (the one its record started on): the request is
	// queued on <prefix>.run.<agent>.<digest>, which only workers running
	// that definition take (docs/PROTOCOL.md, "Agent definitions").
	Definition string `json:"definition,omitempty"`
}

// Validate checks the ids and that there is a prompt.
func (r *RunRequest) Validate() error {
	if err := ValidateID("run", r.RunID); err != nil {
		return err
	}
	if err := ValidateID("agent", r.AgentID); err != nil {
		return err
	}
	if err := ValidateID("session", r.SessionID); err != nil {
		return err
	}
	if r.Answer != nil {
		if err := r.Answer.Validate(); err != nil {
			return fmt.Errorf("run %s: %w", r.RunID, err)
		}
	} else if r.Prompt == "" && !r.Resume && !r.Compact {
		return fmt.Errorf("%w: run %s has an empty prompt", ErrPayload, r.RunID)
	}
	if r.Definition != "" {
		if err := ValidateDigest(r.Definition); err != nil {
			return fmt.Errorf("run %s: %w", r.RunID, err)
		}
	}
	if r.MaxSteps < 0 {
		return fmt.Errorf("%w: run %s max_steps %d is negative", ErrPayload, r.RunID, r.MaxSteps)
	}
	if r.Budget != nil {
		if err := r.Budget.Validate(); err != nil {
			return fmt.Errorf("run %s: %w", r.RunID, err)
		}
	}
	return nil
}

// DecodeRunRequest parses and validates a run request body.
func DecodeRunRequest(body []byte) (*RunRequest, error) {
	var r RunRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: run request: %v", ErrPayload, err)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// ApprovalAnswer is an answer to a tool call waiting for approval, as a
// client sends it on <prefix>.approval.<agent> (JSON; Nats-Msg-Id =
// AnswerID), or as the scheduled expiry of a request sends it (Action
// "expire": every request of the run past its expiry resolves by its
// OnExpiry).
type ApprovalAnswer struct {
	// CallID is the call answered (empty with Action "expire").
	CallID string `json:"call_id,omitempty"`
	// Action is approve, reject, reject_and_continue, or expire.
	Action  string `json:"action"`
	By      string `json:"by,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Comment string `json:"comment,omitempty"`
	// AnswerID identifies the answer (a ULID); the approval.resolved that
	// records it carries it.
	AnswerID   string    `json:"answer_id"`
	AnsweredAt time.Time `json:"answered_at,omitempty"`
}

// ActionExpire is the Action of a scheduled expiry.
const ActionExpire = "expire"

// Validate checks the action, the call and the answer id.
func (a *ApprovalAnswer) Validate() error {
	switch {
	case a.Action == ActionExpire:
	case !ValidAction(a.Action):
		return fmt.Errorf("%w: approval answer: action %q (want approve, reject or reject_and_continue)", ErrPayload, a.Action)
	case a.CallID == "":
		return fmt.Errorf("%w: approval answer: no call_id", ErrPayload)
	case a.Action != ActionApprove && a.Reason == "":
		return fmt.Errorf("%w: approval answer: %s needs a reason", ErrPayload, a.Action)
	}
	if err := ValidateULID("answer", a.AnswerID); err != nil {
		return err
	}
	return nil
}
