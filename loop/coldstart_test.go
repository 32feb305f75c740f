package loop_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
)

// countingHistory counts the reads of a session.
type countingHistory struct {
	loop.History
	reads atomic.Int32
}

func (h *countingHistory) SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error) {
	h.reads.Add(1)
	return h.History.SessionEvents(ctx, agent, session)
}

func (h *countingHistory) RunEvents(ctx context.Context, agent, session, run string) ([]*events.Event, error) {
	h.reads.Add(1)
	return h.History.RunEvents(ctx, agent, session, run)
}

// conversationModel answers each prompt with "answer to <prompt>" and
// records the conversation each call was given.
type conversationModel struct {
	mu    sync.Mutex
	calls [][]events.Message
}

func (m *conversationModel) Generate(_ context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	m.mu.Lock()
	m.calls = append(m.calls, append([]events.Message(nil), req.Messages...))
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	return &loop.ModelResponse{Message: events.Message{Role: events.RoleAssistant, Content: "answer to " + last.Content}}, nil
}

// lastCall returns the conversation of the model's last call.
func (m *conversationModel) lastCall() []events.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[len(m.calls)-1]
}

// wantConversation fails t unless msgs is the conversation of questions
// 0..n: each earlier question with its answer, then question n.
func wantConversation(t *testing.T, msgs []events.Message, n int) {
	t.Helper()
	var want []string
	for i := 0; i <= n; i++ {
		q := fmt.Sprintf("question %d", i)
		want = append(want, string(events.RoleUser)+": "+q)
		if i < n {
			want = append(want, string(events.RoleAssistant)+": answer to "+q)
		}
	}
	var got []string
	for _, m := range msgs {
		got = append(got, string(m.Role)+": "+m.Content)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("run %d was given the conversation\n%s\nwant\n%s", n, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A new run on a session its engine has not seen starts without reading
// it; the session's next run on the same engine reads it. An engine with
// KnownSessions -1 reads every time.
func TestColdStartReadsNothingOnANewSession(t *testing.T) {
	for _, tc := range []struct {
		name       string
		known      int
		wantReads  int32 // of the first run
		wantSecond int32 // of the second
	}{
		{"cold start", 0, 0, 1},
		{"off", -1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := looptest.New()
			h := &countingHistory{History: j}
			model := &conversationModel{}
			eng := newEngine(t, j, loop.Config{History: h, Model: model, KnownSessions: tc.known})
			for i, want := range []int32{tc.wantReads, tc.wantSecond} {
				before := h.reads.Load()
				res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: fmt.Sprintf("question %d", i)})
				if err != nil || res.Reason != events.ReasonDone {
					t.Fatalf("run %d: %v, %+v", i, err, res)
				}
				if got := h.reads.Load() - before; got != want {
					t.Errorf("run %d read the session %d times, want %d", i, got, want)
				}
				wantConversation(t, model.lastCall(), i)
			}
			checkChains(t, j.Events())
		})
	}
}

// Two workers (two engines on one bus) take turns on one session. Each
// takes the session for new the first time it sees it; the second worker's
// first append is refused (the session holds the first worker's run), and
// it reads the session and starts again. Every run is given the whole
// conversation so far, each has one end, and every run's record verifies.
// Were a cold attempt's first append not fenced on the empty session, the
// second worker's first run would be stored without the first run's turn.
func TestTwoWorkersTakeTurnsOnOneSession(t *testing.T) {
	b := bustest.StartBus(t)
	model := &conversationModel{}
	workers := []*loop.Engine{
		newEngine(t, b, loop.Config{Model: model}),
		newEngine(t, b, loop.Config{Model: model}),
	}
	const runs = 6
	var ids []string
	for i := range runs {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "shared", Prompt: fmt.Sprintf("question %d", i)}
		ids = append(ids, req.RunID)
		res, err := workers[i%2].Run(ctxT(t), req)
		if err != nil || res.Reason != events.ReasonDone || res.Answer != "answer to "+req.Prompt {
			t.Fatalf("run %d on worker %d: %v, %+v", i, i%2, err, res)
		}
		wantConversation(t, model.lastCall(), i)
	}
	evs := allEvents(t, b)
	checkChains(t, evs)
	for i, id := range ids {
		run := runEvents(evs, id)
		if n := runCompletions(run); n != 1 {
			t.Errorf("run %d has %d ends, want 1", i, n)
		}
		if n := countStages(run, events.StageIntake); n != 1 {
			t.Errorf("run %d has %d intakes, want 1", i, n)
		}
		if n := countStages(run, events.StageRunStarted); n != 1 {
			t.Errorf("run %d has %d run.started, want 1", i, n)
		}
	}
}

// A run's first delivery stored its intake and lost its connection before
// its claim; the redelivery goes to a worker that never saw the session.
// It takes the session for new, its first append is refused (the session
// holds the intake, and no claim: a fence on the claim alone would have
// let it store a second intake with the same seq), and it reads the
// session and carries the run on: one intake, one claim, one end, and the
// run's record verifies.
func TestColdStartOnARedeliveredRunReadsItsSession(t *testing.T) {
	b := bustest.StartBus(t)
	model := &conversationModel{}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: "s1", Prompt: "question 0"}
	first := newEngine(t, b, loop.Config{Model: model, Emitter: &failingEmitter{inner: b, limit: 1}})
	if res, err := first.Run(ctxT(t), req); !errors.Is(err, loop.ErrUnrecorded) {
		t.Fatalf("first delivery: %v, %+v (want ErrUnrecorded)", err, res)
	}
	h := &countingHistory{History: b}
	second := newEngine(t, b, loop.Config{Model: model, History: h})
	res, err := second.Run(ctxT(t), req)
	if err != nil || res.Reason != events.ReasonDone || !res.Resumed {
		t.Fatalf("redelivery: %v, %+v", err, res)
	}
	if h.reads.Load() == 0 {
		t.Error("the redelivery never read its session")
	}
	wantConversation(t, model.lastCall(), 0)
	evs := allEvents(t, b)
	checkChains(t, evs)
	for st, want := range map[events.Stage]int{events.StageIntake: 1, events.StageRunStarted: 1, events.StageRunCompleted: 1} {
		if n := countStages(evs, st); n != want {
			t.Errorf("%d %s, want %d", n, st, want)
		}
	}
}

// KnownSessions below -1 is refused.
func TestKnownSessionsBelowMinusOneIsInvalid(t *testing.T) {
	j := looptest.New()
	_, err := loop.New(loop.Config{Emitter: j, History: j, Model: &conversationModel{}, KnownSessions: -2})
	if !errors.Is(err, loop.ErrInvalidConfig) {
		t.Fatalf("New with KnownSessions -2: %v, want ErrInvalidConfig", err)
	}
}

// A run that intake hooks are registered for reads its session first, new
// or not: the hooks are told the conversation's length, and are asked once.
func TestColdStartNotTakenWithIntakeHooks(t *testing.T) {
	j := looptest.New()
	h := &countingHistory{History: j}
	hooks := interceptors.NewChain()
	var asked atomic.Int32
	if _, err := hooks.RegisterFunc(events.StageIntake, "count", func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		asked.Add(1)
		return &interceptors.Decision{Kind: interceptors.Allow}, nil
	}); err != nil {
		t.Fatal(err)
	}
	eng := newEngine(t, j, loop.Config{History: h, Model: &conversationModel{}, Hooks: hooks})
	res, err := eng.Run(ctxT(t), &events.RunRequest{AgentID: "demo", SessionID: "s1", Prompt: "question 0"})
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("run: %v, %+v", err, res)
	}
	if h.reads.Load() != 1 || asked.Load() != 1 {
		t.Errorf("%d reads, intake hook asked %d times; want 1 and 1", h.reads.Load(), asked.Load())
	}
}
