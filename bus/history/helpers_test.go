package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
)

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// recorder writes a session's tool.before events as a worker records them.
type recorder struct {
	b       *bus.Bus
	agent   string
	session string
	seq     uint64
	at      time.Time
}

func newRecorder(b *bus.Bus, agent, session string, at time.Time) *recorder {
	return &recorder{b: b, agent: agent, session: session, at: at}
}

// call records one tool call of run with action a, a second after the
// previous one, and returns the event stored.
func (r *recorder) call(t testing.TB, run string, a events.Action) *events.Event {
	t.Helper()
	r.record(t, run, a)
	last, err := r.b.LastEvent(context.Background(), r.agent, r.session, events.StageToolBefore)
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// record records one tool call as call does.
func (r *recorder) record(t testing.TB, run string, a events.Action) {
	t.Helper()
	r.seq++
	r.at = r.at.Add(time.Second)
	args, _ := json.Marshal(map[string]string{"command": a.Command})
	call := events.ToolCall{ID: fmt.Sprintf("call_%d", r.seq), Name: string(a.Kind), Arguments: args, Action: &a}
	e, err := events.New(events.StageToolBefore, events.Meta{Source: "test", AgentID: r.agent, SessionID: r.session, RunID: run, Subject: call.Name}, events.ToolBefore{Call: call})
	if err != nil {
		t.Fatal(err)
	}
	e.Seq = r.seq
	e.Time = r.at
	if err := r.b.PublishSync(context.Background(), e); err != nil {
		t.Fatalf("record call: %v", err)
	}
}

// other records an event that is not a tool call (the answers skip it).
func (r *recorder) other(t testing.TB, run string) {
	t.Helper()
	r.seq++
	e, err := events.New(events.StageStepStarted, events.Meta{Source: "test", AgentID: r.agent, SessionID: r.session, RunID: run}, events.StepStarted{Step: int(r.seq)})
	if err != nil {
		t.Fatal(err)
	}
	e.Seq = r.seq
	if err := r.b.PublishSync(context.Background(), e); err != nil {
		t.Fatalf("record: %v", err)
	}
}

func shell(cmd string) events.Action { return events.Action{Kind: events.KindShell, Command: cmd} }
func read(path string) events.Action {
	return events.Action{Kind: events.KindFileRead, Paths: []string{path}}
}
func fetch(url string) events.Action { return events.Action{Kind: events.KindWebFetch, URL: url} }

// clock is a settable clock for WithClock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
