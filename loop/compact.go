package loop

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/events"
)

// Compaction. When a run's conversation passes its agent's context budget,
// the loop has the model summarise the older part before the next model
// call: compact.before, the summary call (a model call of purpose
// "compact"), then compact.after, which holds the whole conversation as it
// is after (the summary, then the latest messages kept) and where a reader
// may start reading the session; or compact.failed, and the run goes on
// uncompacted (or fails). A session rebuild takes the conversation from
// the last compact.after on, so a session of any length rebuilds in bounded
// time and memory.

// contextTokens is the conversation's size: the model's last reported
// input and output tokens, or an estimate (a token per four bytes) when it
// is larger.
func (r *run) contextTokens() int {
	est := 0
	for _, m := range r.messages {
		est += 4 + len(m.Content)/4
		for _, c := range m.ToolCalls {
			est += len(c.Name)/4 + len(c.Arguments)/4
		}
	}
	return max(est, r.lastContext)
}

// maybeCompact compacts when the conversation passed the budget.
func (r *run) maybeCompact(ctx context.Context) error {
	c := r.eng.cfg.Compaction
	if c.MaxTokens <= 0 {
		return nil
	}
	if tokens := r.contextTokens(); tokens > c.MaxTokens {
		return r.compact(ctx, tokens, false)
	}
	return nil
}

// compactCut is where the kept part of msgs starts: keep messages back, and
// earlier while that would start with a tool result (which must follow its
// call). 0 or 1: nothing to compact.
func compactCut(msgs []events.Message, keep int) int {
	cut := len(msgs) - keep
	for cut > 0 && msgs[cut].Role == events.RoleTool {
		cut--
	}
	return max(cut, 0)
}

// compact summarises the older part of the conversation.
func (r *run) compact(ctx context.Context, tokens int, manual bool) error {
	c := r.eng.cfg.Compaction
	msgs := r.messages
	cut := compactCut(msgs, c.Keep)
	if cut < 2 {
		return nil // too little to summarise
	}
	if err := r.emit(ctx, events.StageCompactBefore, events.CompactBefore{Messages: len(msgs), Tokens: tokens, Budget: c.MaxTokens, Manual: manual}, ""); err != nil {
		return err
	}
	req := &ModelRequest{AgentID: r.req.AgentID, RunID: r.req.RunID, Step: r.step, Purpose: PurposeCompact}
	if sp := r.eng.cfg.SystemPrompt; sp != "" {
		req.Messages = append(req.Messages, events.Message{Role: events.RoleSystem, Content: sp})
	}
	req.Messages = append(req.Messages, msgs[:cut]...)
	req.Messages = append(req.Messages, events.Message{Role: events.RoleUser, Content: c.Instruction})
	resp, err := r.generate(ctx, req)
	if err == nil && resp.Message.Content == "" {
		err = errors.New("the model gave an empty summary")
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if perr := r.emit(ctx, events.StageCompactFailed, events.CompactFailed{Error: err.Error()}, ""); perr != nil {
			return perr
		}
		if c.Fail {
			return fmt.Errorf("compaction: %w", err)
		}
		r.eng.cfg.Logger.Warn("loop: compaction failed; the run goes on uncompacted", "run", r.req.RunID, "err", err)
		return nil
	}
	resp.Usage.CostUSD = r.eng.cfg.Prices.Cost(resp.Usage)
	r.usage = r.usage.Add(resp.Usage)
	summary := events.Message{Role: events.RoleUser, Content: SummaryPrefix + resp.Message.Content}
	next := append([]events.Message{summary}, msgs[cut:]...)
	if err := r.emitSync(ctx, events.StageCompactAfter, events.CompactAfter{
		MessagesBefore: len(msgs), MessagesAfter: len(next), Summary: resp.Message.Content,
		Messages: next, ReadFrom: r.firstStarted, Usage: resp.Usage,
	}, ""); err != nil {
		return err
	}
	r.messages, r.lastContext = next, 0
	return nil
}

// SummaryPrefix starts the message that stands for a compacted
// conversation.
const SummaryPrefix = "[The conversation so far, summarised]\n"
