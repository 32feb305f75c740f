package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
)

// The load of the randomized fault schedule: two agents on scripted models
// whose Bash calls count their executions, sessions with runs back to
// back, pairs of runs submitted at once on one session, and a human
// answering agent B's approvals from the CLI.

// The schedule's agents: A needs no approval; B's two calculator calls of
// step 2 each wait for a human.
const (
	agentA = "sched-a"
	agentB = "sched-b"
)

// schedCommand is the schedule's Bash command as the scripts write it: it
// appends "<ns>-<pid> unchecked - - <worker>" to calls.log and prints it.
// The guard rewrites its tag, so an execution the guard allowed writes
// "<ns>-<pid> checked <run> <call> <worker>".
const schedCommand = `m="$(date +%s%N)-$$ ` + uncheckedTag + ` $` + envFaultWorker + `"; echo "$m" >> calls.log; echo "$m"`

// approvalExpiry is how long B's calls wait for an answer before their
// expiry rejects them (and the run goes on): long enough that the approver,
// however loaded, answers the calls it means to answer first.
const approvalExpiry = 45 * time.Second

// schedScript writes agent's script (four steps, each model reply after
// delayMS): step 1 counts (Bash) and asks the clock, step 2 the calculator
// (B: twice, each waiting for approval), step 3 counts again, step 4
// answers.
func schedScript(t *testing.T, dir, agent string, delayMS int) string {
	t.Helper()
	bash, _ := json.Marshal(map[string]string{"command": schedCommand, "description": "count this execution"})
	calc := `{"name": "calculator", "arguments": {"expression": "6*7"}}`
	if agent == agentB {
		calc += `, {"name": "calculator", "arguments": {"expression": "2+3"}}`
	}
	d := fmt.Sprint(delayMS)
	script := `{"name": "` + agent + `", "replies": [
  {"content": "Counting, and the time.", "delay_ms": ` + d + `, "tool_calls": [{"name": "Bash", "arguments": ` + string(bash) + `}, {"name": "clock"}]},
  {"content": "Now the sum.", "delay_ms": ` + d + `, "tool_calls": [` + calc + `]},
  {"content": "Counting again.", "delay_ms": ` + d + `, "tool_calls": [{"name": "Bash", "arguments": ` + string(bash) + `}]},
  {"content": "6*7 = {{tool:calculator}}, last mark {{tool:Bash}}.", "delay_ms": ` + d + `}
]}`
	path := filepath.Join(dir, agent+".json")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// schedAgentEntry is one agent of an agent file: its script, the shared
// root, Bash with the worker's name in its environment; A compacts its
// sessions once their conversation passes compactTokens (every two or
// three runs); B's calculator waits for approval.
func schedAgentEntry(agent, version, script, root string) string {
	s := fmt.Sprintf("  - id: %s\n    model: scripted:%s\n    root: %s\n    tools: [Bash, clock, calculator]\n    bash: {env: [%s]}\n",
		agent, script, root, envFaultWorker)
	if version != "" {
		s += fmt.Sprintf("    version: %q\n", version)
	}
	switch agent {
	case agentA:
		s += fmt.Sprintf("    compaction: {max_tokens: %d, keep: 4}\n", compactTokens)
	case agentB:
		s += fmt.Sprintf("    approval: {tools: [{tool: calculator}], expiry: %s, on_expiry: deny}\n", approvalExpiry)
	}
	return s
}

// compactTokens is agent A's context budget: its sessions are compacted
// (compact.before, a summary, compact.after) every two or three runs.
const compactTokens = 500

// schedAgentFile writes an agent file of the given agents and returns its
// path. An agent given as "id@version" is defined with that version.
func schedAgentFile(t *testing.T, dir, name, root string, scripts map[string]string, agents ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("agents:\n")
	for _, a := range agents {
		id, version, _ := strings.Cut(a, "@")
		b.WriteString(schedAgentEntry(id, version, scripts[id], root))
	}
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tracker follows what the schedule waits on, from the events stream: the
// runs' ends, their approval requests and answers, and which of B's calls
// have a tool.after. It reads what was stored since its last read.
type tracker struct {
	b *bus.Bus

	mu        sync.Mutex
	from      uint64
	ended     map[string]*events.Event
	requested map[string]map[string]time.Time // run → call → requested at
	resolved  map[string]map[string]events.ApprovalResolved
	after     map[string]map[string]bool // B's runs: run → call → a tool.after
	sessionOf map[string]string          // run → session (B's runs)
	readErrs  int
}

func newTracker(b *bus.Bus) *tracker {
	return &tracker{b: b, from: 1, ended: map[string]*events.Event{}, requested: map[string]map[string]time.Time{},
		resolved: map[string]map[string]events.ApprovalResolved{}, after: map[string]map[string]bool{}, sessionOf: map[string]string{}}
}

// follow reads the stream every interval until ctx ends.
func (tr *tracker) follow(ctx context.Context, every time.Duration) {
	for ctx.Err() == nil {
		tr.read(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
}

func (tr *tracker) read(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	tr.mu.Lock()
	from := tr.from
	tr.mu.Unlock()
	_, err := tr.b.Replay(ctx, bus.Filter{From: from, Stages: []events.Stage{events.StageRunCompleted, events.StageRunFailed,
		events.StageApprovalRequested, events.StageApprovalResolved, events.StageToolAfter}}, func(e *events.Event) error {
		tr.add(e)
		return nil
	})
	if err != nil {
		tr.mu.Lock()
		tr.readErrs++
		tr.mu.Unlock()
	}
}

func (tr *tracker) add(e *events.Event) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.from = max(tr.from, e.Stored+1)
	in := func(m map[string]map[string]time.Time) map[string]time.Time {
		if m[e.RunID] == nil {
			m[e.RunID] = map[string]time.Time{}
		}
		return m[e.RunID]
	}
	switch e.Stage {
	case events.StageRunCompleted, events.StageRunFailed:
		if tr.ended[e.RunID] == nil {
			tr.ended[e.RunID] = e
		}
	case events.StageApprovalRequested:
		var p events.ApprovalRequested
		if e.DecodeData(&p) == nil {
			in(tr.requested)[p.Call.ID] = time.Now()
			tr.sessionOf[e.RunID] = e.SessionID
		}
	case events.StageApprovalResolved:
		var p events.ApprovalResolved
		if e.DecodeData(&p) == nil {
			if tr.resolved[e.RunID] == nil {
				tr.resolved[e.RunID] = map[string]events.ApprovalResolved{}
			}
			if _, ok := tr.resolved[e.RunID][p.CallID]; !ok {
				tr.resolved[e.RunID][p.CallID] = p
			}
		}
	case events.StageToolAfter:
		if e.AgentID != agentB {
			return
		}
		var p events.ToolAfter
		if e.DecodeData(&p) == nil {
			if tr.after[e.RunID] == nil {
				tr.after[e.RunID] = map[string]bool{}
			}
			tr.after[e.RunID][p.Call.ID] = true
		}
	}
}

func (tr *tracker) hasEnded(run string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.ended[run] != nil
}

// waiting is what the approver sees of one run: its calls asked about
// and not answered, and whether every call of B's step 2 is settled
// (asked about, or has its tool.after).
type waiting struct {
	run     string
	calls   []string
	asked   time.Time // when the first of them was seen asked
	settled bool
}

// pending lists the runs with calls asked about and not answered, that
// have not ended.
func (tr *tracker) pending() []waiting {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []waiting
	for run, calls := range tr.requested {
		if tr.ended[run] != nil {
			continue
		}
		w := waiting{run: run, settled: true}
		for c, at := range calls {
			if _, ok := tr.resolved[run][c]; ok {
				continue
			}
			w.calls = append(w.calls, c)
			if w.asked.IsZero() || at.Before(w.asked) {
				w.asked = at
			}
		}
		for _, c := range []string{"call_2_1", "call_2_2"} {
			if _, asked := calls[c]; !asked && !tr.after[run][c] {
				w.settled = false
			}
		}
		if len(w.calls) > 0 {
			slices.Sort(w.calls)
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b waiting) int { return a.asked.Compare(b.asked) })
	return out
}

// plan is how the approver answers one of B's runs.
type plan int

const (
	planApprove  plan = iota // approve every call
	planContinue             // reject the first call and continue, approve the other
	planReject               // reject the first call (the run ends rejected), approve the other
	planExpire               // answer nothing: the expiry rejects both calls and the run goes on
)

func (p plan) String() string {
	return [...]string{"approve", "reject-and-continue", "reject", "expire"}[p]
}

// submitted is one run the schedule queued (its submission acknowledged).
type submitted struct {
	id, agent, session string
	lane               int
	pair               bool   // submitted at once with another run of its session
	via                string // bus or cli
	plan               plan   // B's runs
}

// load is the submitting side of the schedule: lanes of sessions, the
// approver, and what they did.
type load struct {
	fl   *schedFleet // where and as whom the submissions and answers connect
	sub  *bus.Bus    // the submissions' bus, as the loop user
	tr   *tracker
	seed uint64

	stop   atomic.Bool // no new submissions
	mu     sync.Mutex
	runs   map[string]*submitted
	order  []string
	unackd int      // loop submit processes that failed (their run may be queued)
	stuck  []string // runs a lane gave up waiting for
	// The approver's side.
	answers      map[string]*answering // by run
	notes        []string              // approval anomalies the audit reports
	answered     int                   // answers recorded by the approver's first try or a retry
	recovered    int                   // answers whose ack was lost, found recorded by the retry
	refused      int                   // conflicting second answers refused naming the first
	refusedEnded int                   // conflicting second answers refused because the first, a reject, ended the run
	expiredQ     int                   // runs the approver found answered by an expiry first
	retries      int                   // answers tried again after a transient failure
	cliSubmit    int                   // runs queued by loop submit
}

func newLoad(fl *schedFleet, sub *bus.Bus, tr *tracker, seed uint64) *load {
	return &load{fl: fl, sub: sub, tr: tr, seed: seed, runs: map[string]*submitted{}, answers: map[string]*answering{}}
}

func (l *load) note(format string, args ...any) {
	l.mu.Lock()
	l.notes = append(l.notes, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// lane submits runs of agent until the load stops: a session gets 2 to 5
// runs, one after the other ended (a fifth of them a pair submitted at
// once), then the lane takes a new session.
func (l *load) lane(ctx context.Context, i int, agent string) {
	rng := rand.New(rand.NewPCG(l.seed, uint64(1000+i)))
	for s := 0; !l.stop.Load() && ctx.Err() == nil; s++ {
		session := fmt.Sprintf("l%02d-s%03d", i, s)
		n := 2 + rng.IntN(4)
		for r := 0; r < n && !l.stop.Load() && ctx.Err() == nil; r++ {
			k := 1
			if rng.IntN(5) == 0 {
				k = 2
			}
			batch := make([]*submitted, k)
			for j := range batch {
				sub := &submitted{agent: agent, session: session, lane: i, pair: k == 2, via: "bus"}
				if rng.IntN(4) == 0 {
					sub.via = "cli"
				}
				if agent == agentB {
					sub.plan = drawPlan(rng, sub.pair)
				}
				batch[j] = sub
			}
			var wg sync.WaitGroup
			for _, sub := range batch {
				wg.Go(func() { l.submit(ctx, sub) })
			}
			wg.Wait()
			for _, sub := range batch {
				if sub.id == "" {
					continue // never acknowledged before the end
				}
				if !bustest.Poll(ctx, 6*time.Minute, 20*time.Millisecond, func() bool { return l.tr.hasEnded(sub.id) }) && ctx.Err() == nil {
					l.mu.Lock()
					l.stuck = append(l.stuck, sub.id)
					l.mu.Unlock()
					r = n // a new session
				}
			}
		}
	}
}

// drawPlan draws how B's run is answered; a pair's runs are never rejected
// (the conflicting answers are tried on runs alone in their session).
func drawPlan(rng *rand.Rand, pair bool) plan {
	x := rng.IntN(100)
	switch {
	case x < 10:
		return planExpire
	case pair:
		return planApprove
	case x < 20:
		return planReject
	case x < 35:
		return planContinue
	}
	return planApprove
}

// submit queues sub, through the bus (sent again with the same id until
// JetStream stores it) or a loop submit process (another run, with a new
// id, when one fails), and records it.
func (l *load) submit(ctx context.Context, sub *submitted) {
	prompt := "count, and what is 6*7?"
	if sub.via == "bus" {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: sub.agent, SessionID: sub.session, Prompt: prompt}
		sub.id = req.RunID
		l.record(sub)
		for ctx.Err() == nil {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := runs.New(l.sub).Submit(sctx, req)
			cancel()
			if err == nil {
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		return
	}
	for ctx.Err() == nil {
		args := append([]string{"submit", "--nats", l.fl.urls(userLoop), "--agent", sub.agent, "--session", sub.session}, l.fl.replicas...)
		res, err := runProc(40*time.Second, "loop", append(args, prompt)...)
		if err == nil && res.code == 0 && events.ValidateULID("run", strings.TrimSpace(res.stdout)) == nil {
			sub.id = strings.TrimSpace(res.stdout)
			l.mu.Lock()
			l.cliSubmit++
			l.mu.Unlock()
			l.record(sub)
			return
		}
		l.mu.Lock()
		l.unackd++
		l.mu.Unlock()
		time.Sleep(500 * time.Millisecond)
	}
}

func (l *load) record(sub *submitted) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[sub.id] = sub
	l.order = append(l.order, sub.id)
}

func (l *load) submittedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.order)
}

// allEnded reports whether every run submitted has ended, and how many
// have not.
func (l *load) notEnded() []string {
	l.mu.Lock()
	ids := slices.Clone(l.order)
	l.mu.Unlock()
	var out []string
	for _, id := range ids {
		if !l.tr.hasEnded(id) {
			out = append(out, id)
		}
	}
	return out
}

// answering is the approver's progress on one run.
type answering struct {
	first    string // the call answered first
	firstAct string // its action
	conflict bool   // the conflicting second answer was refused naming the first
	named    string // the answer id the refusal named
	done     map[string]bool
	since    time.Time // first seen waiting
	next     time.Time // do not try again before
	lastErr  string
	gaveUp   bool
	noted    bool              // the calls' missed expiry is noted (once)
	acked    map[string]string // call → the action the approver's answer to it was acknowledged (recorded) with
}
