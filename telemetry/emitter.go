package telemetry

import (
	"context"
	"slices"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
)

// Emitter is how the engine appends to the log: loop.Emitter's methods,
// which *bus.Bus implements. Declared here so that telemetry needs no
// engine to wrap one.
type Emitter interface {
	Append(ctx context.Context, e *events.Event, claim uint64) error
	AppendSync(ctx context.Context, e *events.Event, claim uint64) error
	Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error)
	Reclaim(ctx context.Context, e *events.Event, last, seen uint64) (uint64, error)
	AppendAfter(ctx context.Context, e *events.Event, seen uint64) (uint64, error)
	Flush(ctx context.Context, runID string) error
}

// Emitter wraps a worker's Emitter: every event the engine appends is
// observed (Metrics.Observe) and the appends the engine waits for are
// timed (hookbus_publish_duration_seconds). A worker's metrics are fed by
// its own events this way, with no consumer of its own and no call site
// of the engine instrumented.
func (m *Metrics) Emitter(inner Emitter) Emitter { return &emitter{m: m, inner: inner} }

type emitter struct {
	m     *Metrics
	inner Emitter
}

func (em *emitter) Append(ctx context.Context, e *events.Event, claim uint64) error {
	err := em.inner.Append(ctx, e, claim)
	if err == nil {
		em.m.Observe(e)
	}
	return err
}

func (em *emitter) AppendSync(ctx context.Context, e *events.Event, claim uint64) error {
	start := time.Now()
	err := em.inner.AppendSync(ctx, e, claim)
	em.waited("append_sync", start, e, err)
	return err
}

func (em *emitter) Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error) {
	start := time.Now()
	claim, err := em.inner.Claim(ctx, e, last)
	em.waited("claim", start, e, err)
	return claim, err
}

func (em *emitter) Reclaim(ctx context.Context, e *events.Event, last, seen uint64) (uint64, error) {
	start := time.Now()
	claim, err := em.inner.Reclaim(ctx, e, last, seen)
	em.waited("claim", start, e, err)
	return claim, err
}

func (em *emitter) AppendAfter(ctx context.Context, e *events.Event, seen uint64) (uint64, error) {
	start := time.Now()
	at, err := em.inner.AppendAfter(ctx, e, seen)
	em.waited("append_sync", start, e, err)
	return at, err
}

// waited records how long an append of kind op the engine waited for took
// since start, and observes e once it is stored (err nil).
func (em *emitter) waited(op string, start time.Time, e *events.Event, err error) {
	em.m.ObservePublish(op, time.Since(start))
	if err == nil {
		em.m.Observe(e)
	}
}

func (em *emitter) Flush(ctx context.Context, runID string) error {
	start := time.Now()
	err := em.inner.Flush(ctx, runID)
	em.m.ObservePublish("flush", time.Since(start))
	return err
}

// RunHandler wraps a worker's run handler: it records each request's
// queue lag (from its submission to now) before handing it on, and once
// the attempt returns, its run is no longer in flight in this worker
// (whether it ended, waits, or stopped to be resumed elsewhere).
func (m *Metrics) RunHandler(h runs.Handler) runs.Handler {
	return func(ctx context.Context, req *events.RunRequest) (runs.Outcome, error) {
		if !req.SubmittedAt.IsZero() && !req.Resume {
			m.ObserveQueueLag(time.Since(req.SubmittedAt))
		}
		defer func() {
			m.mu.Lock()
			m.stopRun(req.RunID)
			m.mu.Unlock()
		}()
		return h(ctx, req)
	}
}

// Tailer reads and follows the events stream; *bus.Bus implements it.
type Tailer interface {
	Lookup
	Tail(ctx context.Context, f bus.Filter, fn func(*events.Event) error) error
}

// FollowApprovals keeps hookbus_approvals_pending true for the whole bus
// in a process that sees only some events (a worker sees its own): it
// reads the approvals recorded so far, then follows new ones until ctx
// ends (the gauge then counts what the stream holds, the events this
// process observes among them). It returns the first read's error; following stops at a later
// error (logged by the caller from the returned channel).
func (m *Metrics) FollowApprovals(ctx context.Context, b Tailer) (<-chan error, error) {
	var last uint64
	m.mu.Lock()
	m.following = true
	m.mu.Unlock()
	observe := func(e *events.Event) error {
		m.mu.Lock()
		m.foldApproval(e)
		if e.Stage.Terminal() {
			delete(m.approvals, e.RunID)
		}
		m.mu.Unlock()
		last = max(last, e.Stored)
		return nil
	}
	// The stages that say what waits for a human (record.Run.Waiting).
	stages := record.ApprovalStages
	if _, err := b.Replay(ctx, bus.Filter{Stages: stages}, observe); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		done <- b.Tail(ctx, bus.Filter{Stages: stages, From: last + 1}, observe)
	}()
	return done, nil
}

// foldApproval folds an event into its run's calls waiting for a human
// (record.Run), from the run's first approval.requested on; m.mu is held.
func (m *Metrics) foldApproval(e *events.Event) {
	if !slices.Contains(record.ApprovalStages, e.Stage) {
		return
	}
	r := m.approvals[e.RunID]
	if r == nil {
		if e.Stage != events.StageApprovalRequested {
			return
		}
		r = &record.Run{}
		m.approvals[e.RunID] = r
	}
	_, _ = r.Add(e) // an event that does not decode folds nothing
}
