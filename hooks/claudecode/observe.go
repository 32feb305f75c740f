package claudecode

import (
	"context"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
)

// Emitter returns em with the observing hooks added: after an event of an
// observe-only stage is appended (or claimed: run.started), the hooks of
// the Claude Code events it fires (SessionStart, PostToolUseFailure,
// PermissionRequest, Notification, SubagentStop, PreCompact, PostCompact,
// SessionEnd) whose matcher matches run, one after another in the file's
// order, each within its timeout, before the append returns. What they
// answer changes nothing; a failure is logged. With no observing hooks it
// returns em itself.
func (hs *Hooks) Emitter(em loop.Emitter) loop.Emitter {
	if hs == nil || len(hs.observers) == 0 {
		return em
	}
	return &observing{Emitter: em, hs: hs}
}

type observing struct {
	loop.Emitter
	hs *Hooks
}

func (o *observing) Append(ctx context.Context, e *events.Event, claim uint64) error {
	err := o.Emitter.Append(ctx, e, claim)
	o.observe(ctx, e, err)
	return err
}

func (o *observing) AppendSync(ctx context.Context, e *events.Event, claim uint64) error {
	err := o.Emitter.AppendSync(ctx, e, claim)
	o.observe(ctx, e, err)
	return err
}

func (o *observing) Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error) {
	claim, err := o.Emitter.Claim(ctx, e, last)
	o.observe(ctx, e, err)
	return claim, err
}

func (o *observing) Reclaim(ctx context.Context, e *events.Event, last, seen uint64) (uint64, error) {
	claim, err := o.Emitter.Reclaim(ctx, e, last, seen)
	o.observe(ctx, e, err)
	return claim, err
}

func (o *observing) AppendAfter(ctx context.Context, e *events.Event, seen uint64) (uint64, error) {
	at, err := o.Emitter.AppendAfter(ctx, e, seen)
	o.observe(ctx, e, err)
	return at, err
}

// observe runs the observers of e once it is stored (err nil).
func (o *observing) observe(ctx context.Context, e *events.Event, err error) {
	if err == nil {
		o.hs.observe(ctx, e)
	}
}

// observe runs the observers of e's stage that match it.
func (hs *Hooks) observe(ctx context.Context, e *events.Event) {
	switch e.Stage {
	case events.StageRunStarted:
		if _, ran := hs.started.LoadAndDelete(e.RunID); ran {
			return // its SessionStart hooks ran at its intake
		}
	case events.StageRunCompleted, events.StageRunFailed:
		hs.started.Delete(e.RunID) // a prompt denied: no run.started came
	}
	for _, o := range hs.observers[e.Stage] {
		if ctx.Err() != nil {
			return
		}
		in, err := NewInput(o.event, e, Env{})
		if err != nil {
			hs.logger.WarnContext(ctx, "claude code hook: cannot read the event", "plugin", o.reg.Plugin, "event", e.ID, "err", err)
			continue
		}
		if !Applies(o.event, e) || (o.h.Compiled != nil && !o.h.Compiled.Match(in.MatchTarget())) {
			continue
		}
		start := time.Now()
		if err := o.call(ctx, e); err != nil {
			hs.logger.WarnContext(ctx, "claude code hook failed", "plugin", o.reg.Plugin, "hook_event", o.event,
				"stage", e.Stage, "event", e.ID, "latency", time.Since(start), "err", err)
		}
	}
}

// call runs one observer within its timeout, recovering a panic. An
// interceptor that ignores its ctx is abandoned at the timeout, as the
// chain abandons one.
func (o *observer) call(ctx context.Context, e *events.Event) error {
	cctx, cancel := context.WithTimeout(ctx, o.reg.Timeout)
	defer cancel()
	deadline, _ := cctx.Deadline()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- fmt.Errorf("panic: %v", v)
			}
		}()
		_, err := o.ic.Intercept(cctx, &interceptors.Request{Stage: e.Stage, Event: e, Registration: o.reg, Deadline: deadline})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-cctx.Done():
		select {
		case err := <-done: // an answer together with the deadline wins
			return err
		default:
			return fmt.Errorf("%w: no answer within %s", interceptors.ErrTimeout, o.reg.Timeout)
		}
	}
}
