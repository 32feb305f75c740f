package loop

import (
	"context"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/events"
)

// SharedBudget is a budget shared by every worker of a fleet: what an
// agent (or each of its sessions) may spend per period, across runs.
// *budgets.Budgets (package bus/budgets) implements it over a KV bucket.
//
// The engine calls Reserve before each step's model call and Charge after
// it, with what the call used (zero usage when it failed: the reservation
// only ends). A non-empty exceeded from Reserve ends the run with reason
// cost_limit, the detail naming the budget.
type SharedBudget interface {
	Reserve(ctx context.Context, agent, session, run string) (exceeded string, err error)
	Charge(ctx context.Context, agent, session, run string, used events.Usage) error
}

// chargeTimeout bounds a Charge made after the run's ctx ended.
const chargeTimeout = 10 * time.Second

// reserve admits the step's model call against the shared budget (none:
// admitted). It returns the cost_limit end when the budget has no room, and
// an error wrapping ErrUnrecorded when the budget cannot be read: the run
// is not ended and resumes when run again.
func (r *run) reserve(ctx context.Context) error {
	sb := r.eng.cfg.SharedBudget
	if sb == nil {
		return nil
	}
	over, err := sb.Reserve(ctx, r.req.AgentID, r.req.SessionID, r.req.RunID)
	if err != nil {
		return fmt.Errorf("%w: shared budget: %w", ErrUnrecorded, err)
	}
	if over != "" {
		return &errEnd{events.ReasonCostLimit, over}
	}
	return nil
}

// charge adds the step's use to the shared budget and ends its
// reservation, even when ctx has ended.
func (r *run) charge(ctx context.Context, used events.Usage) error {
	sb := r.eng.cfg.SharedBudget
	if sb == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chargeTimeout)
	defer cancel()
	if err := sb.Charge(cctx, r.req.AgentID, r.req.SessionID, r.req.RunID, used); err != nil {
		return fmt.Errorf("%w: shared budget: %w", ErrUnrecorded, err)
	}
	return nil
}
