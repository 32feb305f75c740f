package loop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookbus/hookbus/events"
)

// event builds an event of the run; its seq is given when it is published.
func (r *run) event(stage events.Stage, payload any, subject string) (*events.Event, error) {
	e, err := events.New(stage, events.Meta{
		Source: r.eng.cfg.Source, AgentID: r.req.AgentID, SessionID: r.req.SessionID, RunID: r.req.RunID,
		Step: r.step, Subject: subject,
	}, payload)
	if err != nil {
		return nil, fmt.Errorf("loop: build %s event: %w", stage, err)
	}
	return e, nil
}

// publish gives ev the run's next seq and publishes it, synchronously
// (write-ahead) when sync is set.
func (r *run) publish(ctx context.Context, ev *events.Event, sync bool) error {
	r.seq++
	ev.Seq = r.seq
	var err error
	switch {
	case sync && r.fence != nil:
		err = r.eng.cfg.Emitter.(Fencer).PublishFenced(ctx, ev, r.fence)
	case sync:
		err = r.eng.cfg.Emitter.PublishSync(ctx, ev)
	default:
		err = r.eng.cfg.Emitter.Publish(ctx, ev)
	}
	if err != nil {
		return fmt.Errorf("loop: publish %s of run %s: %w", ev.Stage, r.req.RunID, err)
	}
	r.events++
	return nil
}

// emit builds and publishes an event that no hook intercepts.
func (r *run) emit(ctx context.Context, stage events.Stage, payload any, subject string, sync bool) (*events.Event, error) {
	ev, err := r.event(stage, payload, subject)
	if err != nil {
		return nil, err
	}
	return ev, r.publish(ctx, ev, sync)
}

// republish publishes ev with a new payload (what took effect).
func (r *run) republish(ctx context.Context, ev *events.Event, payload any) error {
	data, err := marshal(payload)
	if err != nil {
		return err
	}
	ev.Data = data
	return r.publish(ctx, ev, false)
}

func marshal(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", events.ErrPayload, err)
	}
	return b, nil
}

// claim publishes the attempt's run.started: with a Fencer it claims the
// session (synchronously) and later write-ahead publishes are fenced by it.
func (r *run) claim(ctx context.Context, ev *events.Event) error {
	f, ok := r.eng.cfg.Emitter.(Fencer)
	if !ok {
		return r.publish(ctx, ev, false)
	}
	r.seq++
	ev.Seq = r.seq
	fence, err := f.Claim(ctx, ev)
	if err != nil {
		return fmt.Errorf("loop: claim session %s/%s for run %s: %w", r.req.AgentID, r.req.SessionID, r.req.RunID, err)
	}
	r.fence = &fence
	r.events++
	return nil
}
