package integration

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// What the hard-fault runs check once the damage is done: the whole events
// stream, read back by observer replay --json, run by run and session by
// session, and the tools' own count of what they did.

// countCommand is a Bash command that counts its executions durably: it
// appends a mark (time in nanoseconds, shell pid) to calls.log in the
// agent's root and prints the mark, so the recorded result names the
// execution it comes from.
const countCommand = `m="$(date +%s%N)-$$"; echo "$m" >> calls.log; echo "$m"`

// callsLog is the file countCommand appends to, under the workers' --root.
const callsLog = "calls.log"

// loadShape is the tool calls of each step of loadScript: step 1 counts
// (Bash) and asks the clock, step 2 the calculator, step 3 counts again,
// step 4 answers.
var loadShape = []int{2, 1, 1, 0}

// loadScript writes the four-step script of the load runs (each model reply
// after delayMS) and returns its path.
func loadScriptFile(t *testing.T, delayMS int) string {
	t.Helper()
	bash, _ := json.Marshal(map[string]string{"command": countCommand, "description": "count this execution"})
	d := strconv.Itoa(delayMS)
	script := `{"name": "faults", "replies": [
  {"content": "Counting, and the time.", "delay_ms": ` + d + `, "tool_calls": [{"name": "Bash", "arguments": ` + string(bash) + `}, {"name": "clock"}]},
  {"content": "Now the sum.", "delay_ms": ` + d + `, "tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
  {"content": "Counting again.", "delay_ms": ` + d + `, "tool_calls": [{"name": "Bash", "arguments": ` + string(bash) + `}]},
  {"content": "6*7 = {{tool:calculator}}, last mark {{tool:Bash}}.", "delay_ms": ` + d + `}
]}`
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadTools is the --tools of the load runs' workers.
const loadTools = "Bash,clock,calculator"

// replayAll reads the whole events stream with observer replay --json
// (urls: one server, or a cluster's comma-separated).
func replayAll(t *testing.T, urls string) []*events.Event {
	t.Helper()
	r := run(t, "observer", "replay", "--nats", urls, "--json")
	if r.code != 0 {
		t.Fatalf("observer replay --json: exit %d\n%s", r.code, r.stderr)
	}
	return jsonEvents(t, r.stdout)
}

// effectiveRun applies the supersede rule of docs/PROTOCOL.md ("One writer
// per session") to one run's events in stream order, as a reader in any
// language would: a second or later run.started with seq N supersedes every
// event of the run stored before it with seq N or more; one stored after
// the run's end supersedes nothing (a run never resumes once ended): a
// claim admitted late, dropped too. It returns the others in seq order,
// and how many it dropped.
func effectiveRun(raw []*events.Event) ([]*events.Event, int) {
	superseded := make([]bool, len(raw))
	first, ended := true, false
	for i, e := range raw {
		if e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed {
			ended = true
		}
		if e.Stage != events.StageRunStarted {
			continue
		}
		if ended {
			superseded[i] = true // a late claim: not part of the run's record
			continue
		}
		if first {
			first = false
			continue
		}
		for j := range i {
			if raw[j].Seq >= e.Seq {
				superseded[j] = true
			}
		}
	}
	var out []*events.Event
	dropped := 0
	for i, e := range raw {
		if superseded[i] {
			dropped++
			continue
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b *events.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, dropped
}

// figures are what one fault run measured, for the report.
type figures struct {
	Runs       int // runs checked
	Events     int // events in the stream
	Attempts   int // run.started events in the runs' effective records
	Superseded int // events in the stream that a later attempt superseded
	OutOfOrder int // runs whose events are not stored in seq order
	BashCalls  int // Bash calls recorded
	Executions int // Bash executions counted in calls.log
	Unknown    int // calls recorded with outcome unknown (tool.failed unknown=true)
	Unrecorded int // Bash executions whose result is not recorded (each paid for by an unknown outcome)
	FollowUps  int // runs whose context was checked against the session's earlier run
	Assemblies int // context.assembled events checked
	Sessions   int // sessions rebuilt with loop.RebuildSession
	// Failed lists the runs that broke an invariant (for the logs).
	Failed []string
}

func (f figures) String() string {
	return fmt.Sprintf("%d runs, %d events, %d attempts (%d resumed), %d superseded events, %d runs stored out of seq order; "+
		"%d Bash calls, %d executions counted, %d outcomes unknown, %d executions unrecorded; %d sessions rebuilt, %d contexts checked (%d follow-up runs)",
		f.Runs, f.Events, f.Attempts, f.Attempts-f.Runs, f.Superseded, f.OutOfOrder,
		f.BashCalls, f.Executions, f.Unknown, f.Unrecorded, f.Sessions, f.Assemblies, f.FollowUps)
}

// auditRuns checks every run of runs (and that the stream holds no other
// run of their agents) against the invariants, and returns the figures:
//   - event ids are unique in the stream;
//   - each run has exactly one terminal event in the stream, run.completed
//     with reason done;
//   - its effective record (supersede rule applied) has seqs 1..N, no gap,
//     no duplicate, the terminal last;
//   - every tool call of the script (call_<step>_<i>, by shape) has exactly
//     one tool.before and one tool.after;
//   - every context.assembled holds a conversation a provider accepts (see
//     checkConversation) of the expected length: the session's earlier runs
//     whole, this run's prompt and its earlier steps, nothing twice.
//
// prior gives, for a run, how many runs of its session came before it.
func auditRuns(t *testing.T, evs []*events.Event, runs []string, prior map[string]int, shape []int) (figures, map[string][]*events.Event) {
	t.Helper()
	checkUniqueIDs(t, evs)
	groups := byRun(evs)
	want := map[string]bool{}
	agents := map[string]bool{}
	fig := figures{Runs: len(runs), Events: len(evs)}
	effs := map[string][]*events.Event{}
	for _, id := range runs {
		bad := func(format string, args ...any) {
			t.Helper()
			t.Errorf(format, args...)
			if !slices.Contains(fig.Failed, id) {
				fig.Failed = append(fig.Failed, id)
			}
		}
		want[id] = true
		raw := groups[id]
		if len(raw) == 0 {
			t.Errorf("run %s: no events", id)
			continue
		}
		agents[raw[0].AgentID] = true
		terminals, ordered := 0, true
		for i, e := range raw {
			if e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed {
				terminals++
			}
			if i > 0 && e.Seq < raw[i-1].Seq {
				ordered = false
			}
		}
		if !ordered {
			fig.OutOfOrder++
		}
		if terminals != 1 {
			bad("run %s: %d terminal events in the stream, want 1\n%s", id, terminals, seqStages(raw))
		}
		eff, dropped := effectiveRun(raw)
		effs[id] = eff
		fig.Superseded += dropped
		if dropped > 0 {
			t.Logf("run %s: %d events superseded by a later attempt; stored: %s", id, dropped, seqStages(raw))
		}
		rc := completed(t, checkRun(t, id, eff))
		if rc.Reason != events.ReasonDone {
			bad("run %s ended %s (%s), want done\n%s", id, rc.Reason, rc.Detail, seqStages(eff))
		}
		before, after := toolCounts(t, eff)
		calls := 0
		for s, n := range shape {
			for i := 1; i <= n; i++ {
				calls++
				c := fmt.Sprintf("call_%d_%d", s+1, i)
				if before[c] != 1 || after[c] != 1 {
					bad("run %s: tool call %s has %d tool.before and %d tool.after, want 1 each\n%s", id, c, before[c], after[c], seqStages(eff))
				}
			}
		}
		if len(before) != calls || len(after) != calls {
			t.Errorf("run %s: tool calls %v / %v, want the script's %d", id, before, after, calls)
		}
		for _, e := range eff {
			switch e.Stage {
			case events.StageRunStarted:
				fig.Attempts++
			case events.StageToolFailed:
				var p events.ToolFailed
				mustDecode(t, e, &p)
				if p.Unknown {
					fig.Unknown++
				}
			case events.StageContextAssembled:
				fig.Assemblies++
				var p events.ContextAssembled
				mustDecode(t, e, &p)
				if err := checkConversation(p.Messages); err != nil {
					t.Errorf("run %s step %d: the model was given %v", id, e.Step, err)
				}
				if n, w := len(p.Messages), expectedMessages(shape, prior[id], e.Step); n != w {
					t.Errorf("run %s step %d: the model was given %d messages, want %d (%d earlier runs in the session): a turn missing or repeated\n%s",
						id, e.Step, n, w, prior[id], roles(p.Messages))
				}
			}
		}
	}
	for id, raw := range groups {
		if !want[id] && agents[raw[0].AgentID] {
			t.Errorf("the stream holds run %s of agent %s that was not submitted\n%s", id, raw[0].AgentID, seqStages(raw))
		}
	}
	return fig, effs
}

// perRun is how many messages one whole run of shape leaves in its session:
// the prompt, one assistant message per step, one result per call.
func perRun(shape []int) int {
	n := 1 + len(shape)
	for _, c := range shape {
		n += c
	}
	return n
}

// expectedMessages is how many messages step of a run is given, with prior
// whole runs before it in the session.
func expectedMessages(shape []int, prior, step int) int {
	n := prior*perRun(shape) + 1
	for s := 0; s < step-1 && s < len(shape); s++ {
		n += 1 + shape[s]
	}
	return n
}

// checkConversation checks that messages are a conversation a provider
// accepts: a user turn is answered by an assistant message; an assistant
// message that calls tools is followed by exactly one result for each of
// its calls, then by an assistant message; no two assistant messages and no
// two user messages in a row (a repeated or lost turn); nothing left
// unanswered at the end.
func checkConversation(msgs []events.Message) error {
	return conversationError(msgs, false)
}

// conversationError is checkConversation; with unanswered it lets a user
// message follow another, as it does when a run's turn ended before the
// model answered it (its session taken over by a run submitted with it):
// providers take consecutive user messages as one turn. A compaction's
// summary (a user message) may be followed by a kept user message in any
// case.
func conversationError(msgs []events.Message, unanswered bool) error {
	var pending map[string]bool
	prev := events.Role("")
	for i, m := range msgs {
		if i > 0 && m.Role == events.RoleUser && strings.HasPrefix(msgs[i-1].Content, loop.SummaryPrefix) {
			prev = ""
		}
		switch m.Role {
		case events.RoleSystem:
			if i > 0 && prev != events.RoleSystem {
				return fmt.Errorf("message %d: a system message after the conversation began\n%s", i, roles(msgs))
			}
		case events.RoleUser:
			if len(pending) > 0 || prev == events.RoleUser && !unanswered {
				return fmt.Errorf("message %d: a user message after %s with %d calls unanswered\n%s", i, prev, len(pending), roles(msgs))
			}
		case events.RoleAssistant:
			if len(pending) > 0 || prev == events.RoleAssistant || prev == "" || prev == events.RoleSystem {
				return fmt.Errorf("message %d: an assistant message after %s with %d calls unanswered (a repeated turn)\n%s", i, prev, len(pending), roles(msgs))
			}
			pending = map[string]bool{}
			for _, c := range m.ToolCalls {
				if pending[c.ID] {
					return fmt.Errorf("message %d: tool call %s twice in one message", i, c.ID)
				}
				pending[c.ID] = true
			}
		case events.RoleTool:
			if !pending[m.ToolCallID] {
				return fmt.Errorf("message %d: a result for %s, which is not an unanswered call of the last assistant message\n%s", i, m.ToolCallID, roles(msgs))
			}
			delete(pending, m.ToolCallID)
		default:
			return fmt.Errorf("message %d: role %q", i, m.Role)
		}
		prev = m.Role
	}
	if len(pending) > 0 {
		return fmt.Errorf("the conversation ends with %d calls unanswered\n%s", len(pending), roles(msgs))
	}
	return nil
}

// roles is a one-line picture of a conversation: u, a(calls), t(id).
func roles(msgs []events.Message) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case events.RoleAssistant:
			ids := make([]string, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				ids[j] = c.ID
			}
			parts[i] = "a(" + strings.Join(ids, ",") + ")"
		case events.RoleTool:
			parts[i] = "t(" + m.ToolCallID + ")"
		default:
			parts[i] = string(m.Role)[:1]
		}
	}
	return strings.Join(parts, " ")
}

// checkSessions rebuilds every session of the runs with loop.RebuildSession
// (as the loop does before a run) from the stream, and checks each is a
// conversation a provider accepts with every run whole, once: runs ×
// perRun(shape) messages, each run's assistant messages the script's steps
// in order. It returns how many sessions it rebuilt.
func checkSessions(t *testing.T, evs []*events.Event, runs []string, shape []int) int {
	t.Helper()
	mine := map[string]bool{}
	for _, id := range runs {
		mine[id] = true
	}
	type key struct{ agent, session string }
	sessions := map[key][]*events.Event{}
	runsOf := map[key]map[string]bool{}
	for _, e := range evs {
		if !mine[e.RunID] {
			continue
		}
		k := key{e.AgentID, e.SessionID}
		sessions[k] = append(sessions[k], e)
		if runsOf[k] == nil {
			runsOf[k] = map[string]bool{}
		}
		runsOf[k][e.RunID] = true
	}
	for k, sevs := range sessions {
		s, err := loop.RebuildSession(sevs)
		if err != nil {
			t.Errorf("session %s/%s: rebuild: %v", k.agent, k.session, err)
			continue
		}
		if len(s.Skipped) > 0 {
			t.Errorf("session %s/%s: rebuild skipped %v", k.agent, k.session, errors.Join(s.Skipped...))
		}
		if err := checkConversation(s.Messages); err != nil {
			t.Errorf("session %s/%s rebuilt: %v", k.agent, k.session, err)
		}
		n := len(runsOf[k])
		if s.Runs != n || len(s.Messages) != n*perRun(shape) {
			t.Errorf("session %s/%s rebuilt: %d runs, %d messages; want %d runs, %d messages\n%s", k.agent, k.session, s.Runs, len(s.Messages), n, n*perRun(shape), roles(s.Messages))
			continue
		}
		// Each run: the prompt, then the steps' assistant messages in
		// order, each with the script's number of calls.
		for r := 0; r < n; r++ {
			i := r * perRun(shape)
			if s.Messages[i].Role != events.RoleUser {
				t.Errorf("session %s/%s: run %d does not begin with its prompt\n%s", k.agent, k.session, r+1, roles(s.Messages))
				break
			}
			i++
			for step, calls := range shape {
				if m := s.Messages[i]; m.Role != events.RoleAssistant || len(m.ToolCalls) != calls {
					t.Errorf("session %s/%s: run %d step %d is not the script's reply\n%s", k.agent, k.session, r+1, step+1, roles(s.Messages))
				}
				i += 1 + calls
			}
		}
	}
	return len(sessions)
}

// mark is one execution counted in calls.log.
type mark struct {
	text string
	at   time.Time
}

// readMarks reads calls.log under root.
func readMarks(t *testing.T, root string) []mark {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, callsLog))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []mark
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		ns, _, ok := strings.Cut(line, "-")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil {
			t.Fatalf("%s: line %q is not a mark", callsLog, line)
		}
		out = append(out, mark{text: line, at: time.Unix(0, n)})
	}
	return out
}

// checkExecutions holds the Bash calls of the runs' effective records to
// the executions counted in calls.log: the tool never ran twice for one
// call.
//   - every recorded Bash result is one mark of calls.log, and no mark is
//     the result of two calls;
//   - every execution whose result is not recorded belongs to a call whose
//     outcome is recorded as unknown (tool.failed unknown=true): each such
//     mark is matched to a distinct unknown call whose tool.before was made
//     before the mark was written. An execution that no unknown call pays
//     for ran a call a second time.
//
// It adds the counts to fig.
func checkExecutions(t *testing.T, root string, effs map[string][]*events.Event, fig *figures) {
	t.Helper()
	marks := readMarks(t, root)
	fig.Executions += len(marks)
	counted := map[string]int{}
	for _, m := range marks {
		counted[m.text]++
		if counted[m.text] > 1 {
			t.Errorf("%s: mark %s twice", callsLog, m.text)
		}
	}
	recorded := map[string]string{} // mark → run/call
	var unknownAt []time.Time       // tool.before times of Bash calls of unknown outcome
	for id, eff := range effs {
		beforeAt := map[string]time.Time{}
		for _, e := range eff {
			switch e.Stage {
			case events.StageToolBefore:
				var p events.ToolBefore
				mustDecode(t, e, &p)
				beforeAt[p.Call.ID] = e.Time
			case events.StageToolFailed:
				var p events.ToolFailed
				mustDecode(t, e, &p)
				if p.Unknown && p.Call.Name == "Bash" {
					unknownAt = append(unknownAt, beforeAt[p.Call.ID])
				}
			case events.StageToolAfter:
				var p events.ToolAfter
				mustDecode(t, e, &p)
				if p.Call.Name != "Bash" {
					continue
				}
				fig.BashCalls++
				if p.Result.IsError {
					continue
				}
				m := strings.TrimSpace(p.Result.Content)
				where := id + "/" + p.Call.ID
				if other, dup := recorded[m]; dup {
					t.Errorf("Bash result %s recorded for %s and %s", m, other, where)
				}
				recorded[m] = where
				if counted[m] != 1 {
					t.Errorf("%s: Bash result %q is not one execution counted in %s", where, m, callsLog)
				}
			}
		}
	}
	var unrecorded []time.Time
	for _, m := range marks {
		if _, ok := recorded[m.text]; !ok {
			unrecorded = append(unrecorded, m.at)
		}
	}
	fig.Unrecorded += len(unrecorded)
	// Greedy matching, earliest first: an execution pairs with the earliest
	// unpaid unknown call made before it.
	slices.SortFunc(unrecorded, time.Time.Compare)
	slices.SortFunc(unknownAt, time.Time.Compare)
	j := 0
	for _, at := range unrecorded {
		if j >= len(unknownAt) || unknownAt[j].After(at) {
			t.Errorf("a Bash execution at %s has no recorded result and no call of unknown outcome before it: a call ran twice (%d unrecorded executions, %d unknown outcomes)",
				at.Format(time.RFC3339Nano), len(unrecorded), len(unknownAt))
			return
		}
		j++
	}
}
