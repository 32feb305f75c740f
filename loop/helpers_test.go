package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// record is where a test's runs are recorded: a real bus, or an in-memory
// journal for the tests about the loop rather than the transport.
type record interface {
	loop.Emitter
	loop.History
}

// allEvents reads every event of the record, in the order it was stored.
func allEvents(t *testing.T, r record) []*events.Event {
	t.Helper()
	if j, ok := r.(*looptest.Journal); ok {
		return j.Events()
	}
	var out []*events.Event
	if _, err := r.(*bus.Bus).Replay(ctxT(t), bus.Filter{}, func(e *events.Event) error {
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	return out
}

func stagesOf(evs []*events.Event) []events.Stage {
	out := make([]events.Stage, len(evs))
	for i, e := range evs {
		out[i] = e.Stage
	}
	return out
}

func runEvents(evs []*events.Event, runID string) []*events.Event {
	var out []*events.Event
	for _, e := range evs {
		if e.RunID == runID {
			out = append(out, e)
		}
	}
	return out
}

func newEngine(t *testing.T, b record, cfg loop.Config) *loop.Engine {
	t.Helper()
	if cfg.Emitter == nil {
		cfg.Emitter = b
	}
	if cfg.History == nil {
		cfg.History = b
	}
	if cfg.Model == nil {
		cfg.Model = scripted.New(nil)
	}
	if cfg.Tools == nil {
		cfg.Tools = tools.Builtin("")
	}
	e, err := loop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// countingTool counts its calls and answers with a fixed text.
type countingTool struct {
	name       string
	answer     string
	err        error
	panics     bool
	idempotent bool
	calls      atomic.Int32
}

func (c *countingTool) Spec() events.ToolSpec {
	return events.ToolSpec{Name: c.name, Idempotent: c.idempotent}
}
func (c *countingTool) Call(context.Context, json.RawMessage) (string, error) {
	c.calls.Add(1)
	if c.panics {
		panic("tool exploded")
	}
	return c.answer, c.err
}

// failingEmitter passes appends to the bus until limit events were
// appended, then fails them all: a worker that lost its connection once
// everything it had sent was stored (so a test knows what the record
// holds).
type failingEmitter struct {
	inner loop.Emitter
	mu    sync.Mutex
	n     int
	limit int
}

var errLost = errors.New("connection lost")

func (f *failingEmitter) ok(e *events.Event) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.n == f.limit+1 {
		_ = f.inner.Flush(context.Background(), e.RunID)
	}
	return f.n <= f.limit
}

func (f *failingEmitter) Append(ctx context.Context, e *events.Event, claim uint64) error {
	if !f.ok(e) {
		return errLost
	}
	return f.inner.Append(ctx, e, claim)
}

func (f *failingEmitter) AppendSync(ctx context.Context, e *events.Event, claim uint64) error {
	if !f.ok(e) {
		return errLost
	}
	return f.inner.AppendSync(ctx, e, claim)
}

func (f *failingEmitter) Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error) {
	if !f.ok(e) {
		return 0, errLost
	}
	return f.inner.Claim(ctx, e, last)
}

func (f *failingEmitter) Reclaim(ctx context.Context, e *events.Event, last, seen uint64) (uint64, error) {
	if !f.ok(e) {
		return 0, errLost
	}
	return f.inner.Reclaim(ctx, e, last, seen)
}

func (f *failingEmitter) AppendAfter(ctx context.Context, e *events.Event, seen uint64) (uint64, error) {
	if !f.ok(e) {
		return 0, errLost
	}
	return f.inner.AppendAfter(ctx, e, seen)
}

func (f *failingEmitter) Flush(ctx context.Context, runID string) error {
	return f.inner.Flush(ctx, runID)
}

var _ = bustest.StartBus
