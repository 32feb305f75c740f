package loop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/events/tracectx"
	"github.com/hookbus/hookbus/interceptors"
)

// stage is how one stage's event is written.
type stage struct {
	stage   events.Stage
	subject string            // the CloudEvent subject: the tool name on tool stages
	kind    events.ActionKind // the kind of a tool stage's call (its action)
	// sync appends the event write-ahead: after every earlier event of
	// the attempt is stored, and returning once it is.
	sync bool
}

// intercepted runs one interceptable stage, the step every such stage goes
// through: it builds the stage's event with payload p, asks the hooks that
// match it (none: no cost), appends one hook.decided or hook.failed per
// interceptor called, and appends the event as it took effect. adjust, when
// set, may change the payload after the hooks (tool.after's context, a
// stop's continue) and reports whether it did. It returns the payload that
// took effect and the chain's result (allowed when no hook matched), which
// the stage acts on.
//
// The interception request is the event as it will be stored: its seq is
// the one it gets when every matching hook answers (a hook that ends the
// chain early leaves the later ones uncalled, and the stored event a lower
// seq); its id is not: the stored event gets a new id once the hooks have
// answered, so no interceptor can predict it (and store a forgery under
// it). The hook.decided records name the stored id.
func intercepted[P any](ctx context.Context, r *run, st stage, p P, adjust func(*P, *interceptors.ChainResult) bool) (P, *interceptors.ChainResult, error) {
	ev, err := r.event(st.stage, p, st.subject)
	if err != nil {
		return p, nil, err
	}
	out := allowed
	if r.hooks != nil {
		if n := r.hooks.MatchesCall(st.stage, st.subject, st.kind, r.req.AgentID); n > 0 {
			ev.Seq = r.chain.Seq + uint64(n) + 1
			changed := false
			if out, changed, err = r.intercept(ctx, ev); err != nil {
				return p, nil, err
			}
			if changed {
				var q P
				if err := ev.DecodeData(&q); err != nil {
					return p, nil, err
				}
				p = q
			}
		}
	}
	if adjust != nil && adjust(&p, out) {
		if ev.Data, err = marshal(p); err != nil {
			return p, nil, err
		}
	}
	return p, out, r.append(ctx, ev, st.sync)
}

// intercept asks the hooks on ev, appends one hook.decided or hook.failed
// per interceptor called, and gives ev its stored id. When the hooks
// changed the payload, ev.Data is theirs and changed is set.
func (r *run) intercept(ctx context.Context, ev *events.Event) (out *interceptors.ChainResult, changed bool, err error) {
	// The stored id, unknown to the interceptors; each call's span is
	// derived from it (tracectx.HookSpan), so a remote interceptor gets its
	// traceparent.
	stored := events.NewID()
	hctx := ctx
	if tc, err := tracectx.Parse(ev.Traceparent); err == nil {
		hctx = tracectx.WithHookCall(ctx, tc, stored)
	}
	out, err = r.hooks.Run(hctx, ev)
	if err != nil {
		return nil, false, fmt.Errorf("loop: hooks on %s: %w", ev.Stage, err)
	}
	ev.ID = stored
	if out.Shadow != nil {
		out.Shadow(ev.ID) // off the run's path; recorded, never applied
	}
	for i := range out.Records {
		out.Records[i].EventID = ev.ID
		st, p := out.Records[i].Audit()
		rec, err := r.event(st, p, out.Records[i].Plugin)
		if err != nil {
			return nil, false, err
		}
		rec.Traceparent = ev.Traceparent // the span the hook was called in
		if err := r.append(ctx, rec, false); err != nil {
			return nil, false, err
		}
	}
	if !sameBytes(out.Data, ev.Data) {
		ev.Data, changed = out.Data, true
	}
	return out, changed, nil
}

// sameBytes reports whether a and b are the same slice (the chain returns
// the input's data when no hook changed it).
func sameBytes(a, b json.RawMessage) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// builder builds a run's events: the engine's, and the answers to its
// approvals.
type builder struct {
	source      string // the events' CloudEvent source
	req         *events.RunRequest
	step        int
	trace       tracectx.Context // the run's span (trace.go)
	parentTrace string           // the trace context the run continues, "" for its own
	// The traceparents of the run's span and of its last tool call's
	// (trace.go), written once for all the events in them.
	runTrace, call, callTrace string
}

// event builds an event of the run; its seq is given when it is appended.
func (b *builder) event(st events.Stage, payload any, subject string) (*events.Event, error) {
	e, err := events.New(st, events.Meta{
		Source: b.source, AgentID: b.req.AgentID, SessionID: b.req.SessionID, RunID: b.req.RunID,
		Step: b.step, Subject: subject, Traceparent: b.traceparent(st, payload),
		ParentAgentID: b.req.ParentAgentID, ParentSessionID: b.req.ParentSessionID, ParentRunID: b.req.ParentRunID,
	}, payload)
	if err != nil {
		return nil, fmt.Errorf("loop: build %s event: %w", st, err)
	}
	return e, nil
}

// emit builds and appends (asynchronously) an event no hook intercepts.
func (r *run) emit(ctx context.Context, st events.Stage, payload any, subject string) error {
	ev, err := r.event(st, payload, subject)
	if err != nil {
		return err
	}
	return r.append(ctx, ev, false)
}

// emitSync builds and appends an event no hook intercepts, write-ahead.
func (r *run) emitSync(ctx context.Context, st events.Stage, payload any, subject string) error {
	ev, err := r.event(st, payload, subject)
	if err != nil {
		return err
	}
	return r.append(ctx, ev, true)
}

// append gives ev the run's next seq and appends it on the attempt's
// claim; sync appends it write-ahead: after every earlier event of the
// attempt is stored (Flush), returning once it is, so that the record up to
// a write-ahead event is complete. Before the attempt's claim it appends
// ev on the session as read (Emitter.AppendAfter), write-ahead. A failure
// wraps ErrUnrecorded (and the Emitter's error: a Claimed when another
// attempt claimed the session, or something was stored on it since it was
// read).
func (r *run) append(ctx context.Context, ev *events.Event, sync bool) error {
	next, err := r.chain.NextSigned(ev, r.eng.cfg.Signer)
	if err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	r.chain.Seq = next.Seq
	em := r.eng.cfg.Emitter
	switch {
	case !r.claimed:
		// Before its claim (a new run's intake and the records of its
		// intake hooks), an attempt appends on the session as it read it:
		// another attempt of the run delivered at the same moment cannot
		// store the same seqs too.
		sync = true
		var at uint64
		if at, err = em.AppendAfter(ctx, ev, r.seen); err == nil {
			r.seen = at
		}
	case sync:
		if err = em.Flush(ctx, r.req.RunID); err == nil {
			err = em.AppendSync(ctx, ev, r.claim)
		}
	default:
		err = em.Append(ctx, ev, r.claim)
	}
	if err != nil {
		if !sync {
			// Not queued, so never stored: its seq is the next event's.
			// (A write-ahead append that failed may have been stored: the
			// attempt stops, and whatever ends the run reads the record
			// again.)
			r.chain.Seq--
		}
		return fmt.Errorf("%w: %s of run %s: %w", ErrUnrecorded, ev.Stage, r.req.RunID, err)
	}
	r.chain = next
	r.events++
	return nil
}

func marshal(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", events.ErrPayload, err)
	}
	return b, nil
}
