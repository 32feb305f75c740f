package loop

import (
	"context"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// steps runs steps until the run ends.
func (r *run) steps(ctx context.Context) (*Result, error) {
	for {
		if r.step >= r.maxSteps {
			return nil, &errEnd{events.ReasonMaxSteps, fmt.Sprintf("%d steps", r.maxSteps)}
		}
		if over := r.budget.Exceeded(r.usage); over != "" {
			return nil, &errEnd{events.ReasonCostLimit, "budget " + over}
		}
		r.step++
		res, err := r.doStep(ctx)
		if err != nil || res != nil {
			return res, err
		}
	}
}

// doStep runs one step; it returns a result when the run is over.
func (r *run) doStep(ctx context.Context) (*Result, error) {
	_, out, err := intercepted(ctx, r, stage{stage: events.StageStepStarted}, events.StepStarted{Step: r.step}, nil)
	if err != nil {
		return nil, err
	}
	if out.Decision == interceptors.Stop {
		return nil, &errEnd{events.ReasonStopped, describe(out)}
	}

	if err := r.maybeCompact(ctx); err != nil {
		return nil, err
	}

	// context.assembled: what the model is about to see.
	msgs := r.messages
	if sp := r.eng.cfg.SystemPrompt; sp != "" {
		msgs = append([]events.Message{{Role: events.RoleSystem, Content: sp}}, msgs...)
	}
	ca, out, err := intercepted(ctx, r, stage{stage: events.StageContextAssembled},
		events.ContextAssembled{Messages: msgs, Tools: r.eng.specs}, nil)
	if err != nil {
		return nil, err
	}
	if end := endOf(out); end != nil {
		return nil, end
	}

	if err := r.reserve(ctx); err != nil {
		return nil, err
	}
	resp, err := r.generate(ctx, &ModelRequest{
		AgentID: r.req.AgentID, RunID: r.req.RunID, Step: r.step, Messages: ca.Messages, Tools: ca.Tools,
	})
	if err != nil {
		if cerr := r.charge(ctx, events.Usage{}); cerr != nil {
			r.eng.cfg.Logger.Warn("loop: shared budget reservation not released", "run", r.req.RunID, "err", cerr)
		}
		return nil, err
	}
	resp.Usage.CostUSD = r.eng.cfg.Prices.Cost(resp.Usage)
	if err := r.charge(ctx, resp.Usage); err != nil {
		return nil, err
	}
	r.usage = r.usage.Add(resp.Usage)
	r.lastContext = resp.Usage.InputTokens + resp.Usage.OutputTokens

	mr, out, err := intercepted(ctx, r, stage{stage: events.StageModelResponded}, events.ModelResponded{
		Message: resp.Message, Usage: resp.Usage, FinishReason: resp.FinishReason, Model: resp.Model, Provider: resp.Provider,
	}, nil)
	if err != nil {
		return nil, err
	}
	if end := endOf(out); end != nil {
		return nil, end
	}
	mr.Message.Role = events.RoleAssistant
	r.messages = append(r.messages, mr.Message)
	r.answer = mr.Message.Content
	waiting, err := r.runCalls(ctx, mr.Message.ToolCalls)
	if err != nil {
		return nil, err
	}
	if waiting {
		return r.wait(ctx)
	}
	return r.endStep(ctx, len(mr.Message.ToolCalls), resp.Usage)
}

// endStep completes the step, and at a reply without tool calls asks the
// stop hooks whether the run ends.
func (r *run) endStep(ctx context.Context, calls int, usage events.Usage) (*Result, error) {
	if err := r.emit(ctx, events.StageStepCompleted, events.StepCompleted{Step: r.step, ToolCalls: calls, Usage: usage}, ""); err != nil {
		return nil, err
	}
	if calls > 0 {
		return nil, nil
	}
	return r.stop(ctx)
}

// stop asks the stop hooks whether the run ends with r.answer, and ends it
// or (a hook's continue) returns nil to go on.
func (r *run) stop(ctx context.Context) (*Result, error) {
	var msg string
	_, out, err := intercepted(ctx, r, stage{stage: events.StageStop},
		events.Stop{Reason: events.ReasonDone, Answer: r.answer, Continues: r.continues},
		func(p *events.Stop, out *interceptors.ChainResult) bool {
			if out.Decision != interceptors.Continue || r.continues >= r.eng.cfg.MaxContinues {
				return false
			}
			msg = strings.Join(out.Context, "\n")
			if msg == "" {
				msg = out.Reason
			}
			*p = events.Stop{Reason: events.ReasonDone, Answer: r.answer, Continues: r.continues + 1, Continue: msg, Plugin: out.Plugin}
			return true
		})
	if err != nil {
		return nil, err
	}
	if msg != "" {
		r.continues++
		r.messages = append(r.messages, continueMessage(msg))
		return nil, nil
	}
	if out.Decision == interceptors.Stop {
		return nil, &errEnd{events.ReasonStopped, describe(out)}
	}
	return r.finish(ctx, events.ReasonDone, "")
}
