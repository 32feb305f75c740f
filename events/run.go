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
	// Budget overrides the agent's budget, field by field, for this run.
	Budget      *Budget   `json:"budget,omitempty"`
	SubmittedAt time.Time `json:"submitted_at"`
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
	if r.Prompt == "" {
		return fmt.Errorf("%w: run %s has an empty prompt", ErrPayload, r.RunID)
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
