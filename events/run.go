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
	// Resume asks a worker to go on with a run that exists (a waiting run
	// whose approvals are all answered); Prompt is empty then.
	Resume bool `json:"resume,omitempty"`
	// ResumeAfter, on a resumption, is the events stream sequence of the
	// answer that left nothing of the run waiting: an attempt whose read
	// of the session does not hold it reads a stale replica and hands the
	// request back rather than take the run for still waiting.
	ResumeAfter uint64 `json:"resume_after,omitempty"`
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
	if r.Prompt == "" && !r.Resume && !r.Compact {
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

// Wake is a waiting run's wake-up at the expiry of its approvals: the JSON
// body of a message scheduled on <prefix>.wake.<agent>.<run> and delivered
// on <prefix>.wake.<agent>.<run>.due (docs/PROTOCOL.md, "Approvals").
type Wake struct {
	RunID     string `json:"run_id"`
	AgentID   string `json:"agent_id"`
	SessionID string `json:"session_id"`
	// At is when it is due: the first expiry of the run's waiting calls.
	At time.Time `json:"at"`
}

// Validate checks the ids.
func (w *Wake) Validate() error {
	if err := ValidateID("run", w.RunID); err != nil {
		return err
	}
	if err := ValidateID("agent", w.AgentID); err != nil {
		return err
	}
	return ValidateID("session", w.SessionID)
}
