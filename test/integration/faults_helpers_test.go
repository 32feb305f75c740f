package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/nats-io/nats.go"
)

// What the fault tests share: reading the whole stream back, the
// invariants every run must keep, scripts, and a model that holds a step
// until the test has done its damage.

// testCtx is a context bounded by d, cancelled at cleanup.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// connect connects to urls (comma-separated) as the loop does
// (bus.Connect: reconnecting forever), closed at cleanup.
func connect(t *testing.T, urls string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := bus.Connect(urls, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// newBus is a bus over nc, without provisioning (the streams exist).
func newBus(t *testing.T, nc *nats.Conn, opts ...bus.Option) *bus.Bus {
	t.Helper()
	b, err := bus.New(nc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// streamEvents reads every event of the events stream, in stream order.
// A message that is not a hookbus event fails the test: the loop wrote
// everything there.
func streamEvents(t *testing.T, ctx context.Context, b *bus.Bus) []*events.Event {
	t.Helper()
	var out []*events.Event
	st, err := b.Replay(ctx, bus.Filter{}, func(e *events.Event) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatalf("replay the events stream: %v", err)
	}
	if st.Malformed != 0 {
		t.Fatalf("the events stream holds %d malformed messages", st.Malformed)
	}
	return out
}

// byRun groups events by run id, each group in stream order.
func byRun(evs []*events.Event) map[string][]*events.Event {
	out := map[string][]*events.Event{}
	for _, e := range evs {
		out[e.RunID] = append(out[e.RunID], e)
	}
	return out
}

// checkUniqueIDs asserts that no event id is stored twice.
func checkUniqueIDs(t *testing.T, evs []*events.Event) {
	t.Helper()
	seen := make(map[string]int, len(evs))
	for i, e := range evs {
		if j, dup := seen[e.ID]; dup {
			t.Errorf("event id %s stored twice: stream positions %d (%s) and %d (%s)", e.ID, j, evs[j].Stage, i, e.Stage)
		}
		seen[e.ID] = i
	}
}

// checkRun asserts the invariants of one run's events (in stream order)
// and returns its terminal event:
//   - seqs are 1..N, each once;
//   - exactly one terminal event (run.completed or run.failed), the last
//     by seq; a run.failed names its reason;
//   - every tool call has at most one tool.after, no tool.before comes after
//     its tool.after (a recorded call is never run again), and a completed
//     run has a tool.after for every call it started.
func checkRun(t *testing.T, runID string, evs []*events.Event) *events.Event {
	t.Helper()
	if len(evs) == 0 {
		t.Errorf("run %s: no events", runID)
		return nil
	}
	seqs := make([]uint64, len(evs))
	for i, e := range evs {
		seqs[i] = e.Seq
	}
	slices.Sort(seqs)
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Errorf("run %s: seqs are not 1..%d: %v\nstages: %s", runID, len(evs), seqs, stagesLine(evs))
			break
		}
	}
	// The run's hash chain holds across its attempts (unsigned: these
	// workers have no signing key).
	var v audit.Verifier
	for _, e := range evs {
		v.Add(e)
	}
	for _, vd := range v.Verdicts() {
		for _, p := range vd.Problems {
			if p.Kind != audit.ProblemUnsigned {
				t.Errorf("run %s: verify: %s at seq %d: %s", runID, p.Kind, p.Seq, p.Detail)
			}
		}
	}
	var terminal *events.Event
	var last uint64
	after := map[string]uint64{} // call id → seq of its tool.after
	before := map[string]int{}
	for _, e := range evs {
		last = max(last, e.Seq)
		switch e.Stage {
		case events.StageRunCompleted, events.StageRunFailed:
			if terminal != nil {
				t.Errorf("run %s: two terminal events, %s (seq %d) and %s (seq %d)", runID, terminal.Stage, terminal.Seq, e.Stage, e.Seq)
			}
			terminal = e
		case events.StageToolBefore:
			var p events.ToolBefore
			mustDecode(t, e, &p)
			before[p.Call.ID]++
			if s, ok := after[p.Call.ID]; ok {
				t.Errorf("run %s: tool call %s started again (seq %d) after its tool.after (seq %d)", runID, p.Call.ID, e.Seq, s)
			}
		case events.StageToolAfter:
			var p events.ToolAfter
			mustDecode(t, e, &p)
			if s, ok := after[p.Call.ID]; ok {
				t.Errorf("run %s: tool call %s has two tool.after (seq %d and %d)", runID, p.Call.ID, s, e.Seq)
			}
			after[p.Call.ID] = e.Seq
		}
	}
	switch {
	case terminal == nil:
		t.Errorf("run %s: no run.completed or run.failed; stages: %s", runID, stagesLine(evs))
		return nil
	case terminal.Seq != last:
		t.Errorf("run %s: terminal %s has seq %d, the run goes on to %d", runID, terminal.Stage, terminal.Seq, last)
	case terminal.Stage == events.StageRunFailed:
		var p events.RunFailed
		mustDecode(t, terminal, &p)
		if strings.TrimSpace(p.Error) == "" {
			t.Errorf("run %s: run.failed without a reason", runID)
		}
	case terminal.Stage == events.StageRunCompleted:
		for id := range before {
			if _, ok := after[id]; !ok {
				t.Errorf("run %s completed without a tool.after for call %s", runID, id)
			}
		}
	}
	return terminal
}

// toolCounts counts tool.before and tool.after events per call id.
func toolCounts(t *testing.T, evs []*events.Event) (before, after map[string]int) {
	t.Helper()
	before, after = map[string]int{}, map[string]int{}
	for _, e := range evs {
		switch e.Stage {
		case events.StageToolBefore:
			var p events.ToolBefore
			mustDecode(t, e, &p)
			before[p.Call.ID]++
		case events.StageToolAfter:
			var p events.ToolAfter
			mustDecode(t, e, &p)
			after[p.Call.ID]++
		}
	}
	return before, after
}

func mustDecode(t *testing.T, e *events.Event, v any) {
	t.Helper()
	if err := e.DecodeData(v); err != nil {
		t.Fatalf("event %s (%s): %v", e.ID, e.Stage, err)
	}
}

// completed decodes a run.completed event (nil or run.failed: zero value
// with the error in Detail).
func completed(t *testing.T, e *events.Event) events.RunCompleted {
	t.Helper()
	var rc events.RunCompleted
	switch {
	case e == nil:
	case e.Stage == events.StageRunFailed:
		var p events.RunFailed
		mustDecode(t, e, &p)
		rc.Reason, rc.Detail = loop.ReasonFailed, p.Error
	default:
		mustDecode(t, e, &rc)
	}
	return rc
}

func stagesLine(evs []*events.Event) string {
	var b strings.Builder
	for i, e := range evs {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(string(e.Stage))
	}
	return b.String()
}

// has reports whether evs hold an event of run at stage (and step, when
// step > 0).
func has(evs []*events.Event, run string, stage events.Stage, step int) bool {
	return slices.ContainsFunc(evs, func(e *events.Event) bool {
		return e.RunID == run && e.Stage == stage && (step == 0 || e.Step == step)
	})
}

// runEventsOf reads the events of one run (nil when the stream cannot be
// read right now, as while a cluster elects a leader). One attempt waits 5s
// at most.
func runEventsOf(ctx context.Context, b *bus.Bus, run string) []*events.Event {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var out []*events.Event
	if _, err := b.Replay(ctx, bus.Filter{Run: run}, func(e *events.Event) error {
		out = append(out, e)
		return nil
	}); err != nil {
		return nil
	}
	return out
}

// threeStepScript: step 1 asks the clock, step 2 (after delay) the
// calculator, step 3 answers with both results.
func threeStepScript(delay time.Duration) *scripted.Script {
	return &scripted.Script{Name: "faults", Replies: []scripted.Reply{
		{Content: "Let me check the clock.", ToolCalls: []scripted.ToolCall{{Name: "clock", Arguments: json.RawMessage(`{}`)}}},
		{Content: "Now the sum.", DelayMS: int(delay / time.Millisecond),
			ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}},
		{Content: "It is {{tool:clock}}, and 6*7 = {{tool:calculator}}."},
	}}
}

// faultEmitter does a test's damage at one exact point of a run: at the
// first event the loop appends that matches at, fault runs while that
// event's append is in flight (a write-ahead append waits for its ack
// meanwhile; an asynchronous one is queued on the connection). It keeps
// the last event the loop published.
type faultEmitter struct {
	loop.Emitter
	at    func(*events.Event) bool
	fault func()
	fired atomic.Bool
	last  atomic.Pointer[events.Event] // the last event the loop published or is publishing
}

func (f *faultEmitter) hit(e *events.Event) bool {
	f.last.Store(e)
	return f.at(e) && f.fired.CompareAndSwap(false, true)
}

func (f *faultEmitter) Append(ctx context.Context, e *events.Event, claim uint64) error {
	if !f.hit(e) {
		return f.Emitter.Append(ctx, e, claim)
	}
	err := f.Emitter.Append(ctx, e, claim)
	f.fault()
	return err
}

func (f *faultEmitter) AppendSync(ctx context.Context, e *events.Event, claim uint64) error {
	if !f.hit(e) {
		return f.Emitter.AppendSync(ctx, e, claim)
	}
	errc := make(chan error, 1)
	go func() { errc <- f.Emitter.AppendSync(ctx, e, claim) }()
	f.fault()
	return <-errc
}

func (f *faultEmitter) Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error) {
	if !f.hit(e) {
		return f.Emitter.Claim(ctx, e, last)
	}
	type res struct {
		claim uint64
		err   error
	}
	c := make(chan res, 1)
	go func() {
		claim, err := f.Emitter.Claim(ctx, e, last)
		c <- res{claim, err}
	}()
	f.fault()
	r := <-c
	return r.claim, r.err
}

func (f *faultEmitter) Reclaim(ctx context.Context, e *events.Event, last, seen uint64) (uint64, error) {
	if !f.hit(e) {
		return f.Emitter.Reclaim(ctx, e, last, seen)
	}
	type res struct {
		claim uint64
		err   error
	}
	c := make(chan res, 1)
	go func() {
		claim, err := f.Emitter.Reclaim(ctx, e, last, seen)
		c <- res{claim, err}
	}()
	f.fault()
	r := <-c
	return r.claim, r.err
}

// toolCall matches the tool.before or tool.after of one call.
func toolCall(stage events.Stage, callID string) func(*events.Event) bool {
	return func(e *events.Event) bool {
		if e.Stage != stage {
			return false
		}
		var p events.ToolBefore // tool.after's call has the same field
		return e.DecodeData(&p) == nil && p.Call.ID == callID
	}
}

// logOrder logs a run's events when they are not stored in seq order (a
// publish sent again after a fault may be stored after later ones).
func logOrder(t *testing.T, evs []*events.Event) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq < evs[i-1].Seq {
			var b strings.Builder
			for _, e := range evs {
				fmt.Fprintf(&b, "%d:%s ", e.Seq, e.Stage)
			}
			t.Logf("stored out of seq order: %s", b.String())
			return
		}
	}
}
