package loop

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/events"
)

// generate asks the model, within the model timeout, and retries a failure
// the provider marks retryable (and a call that timed out) after a back-off
// or the provider's Retry-After, up to the retry policy's attempts. Each
// failed attempt is a model.failed event saying what failed and whether it
// is retried. The last failure is the error; when the run's ctx ends
// first, ctx's error.
func (r *run) generate(ctx context.Context, req *ModelRequest) (*ModelResponse, error) {
	policy := r.eng.cfg.ModelRetry
	wait := policy.Backoff
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, r.eng.cfg.ModelTimeout)
		resp, err := r.eng.cfg.Model.Generate(cctx, req)
		timedOut := cctx.Err() != nil
		cancel()
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var me *ModelError
		if !errors.As(err, &me) {
			me = &ModelError{Message: err.Error(), Err: err}
			if timedOut {
				me.Type, me.Retryable = "timeout", true
				me.Message = fmt.Sprintf("no answer within %s", r.eng.cfg.ModelTimeout)
			}
		}
		f := events.ModelFailed{Error: err.Error(), Provider: me.Provider, Status: me.Status, Type: me.Type, Attempt: attempt}
		retry := me.Retryable && attempt < policy.Attempts
		next := wait
		if retry {
			if me.RetryAfter > 0 {
				next = me.RetryAfter
			}
			next = min(next, policy.MaxBackoff)
			f.RetryInMS = max(next.Milliseconds(), 1)
		}
		if perr := r.emit(ctx, events.StageModelFailed, f, ""); perr != nil {
			return nil, errors.Join(err, perr)
		}
		if !retry {
			if me.Retryable {
				return nil, fmt.Errorf("model: %d attempts failed, the last: %w", attempt, err)
			}
			return nil, fmt.Errorf("model: %w", err)
		}
		r.eng.cfg.Logger.Warn("loop: model call failed; retrying", "run", r.req.RunID, "attempt", attempt, "in", next, "err", err)
		if err := sleepCtx(ctx, next); err != nil {
			return nil, err
		}
		wait = min(wait*2, policy.MaxBackoff)
	}
}
