package bridge_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/codex"
	"github.com/hookbus/hookbus/hooks/gemini"
	"github.com/hookbus/hookbus/hooks/harness"
)

// stages lists a session's events as "run:stage", runs numbered in order.
func stages(t *testing.T, b *bus.Bus, agent, session string) string {
	t.Helper()
	evs, err := b.SessionEvents(context.Background(), agent, session)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	var out []string
	for _, e := range evs {
		if _, ok := runs[e.RunID]; !ok {
			runs[e.RunID] = len(runs) + 1
		}
		out = append(out, fmt.Sprintf("%d:%s", runs[e.RunID], e.Stage))
	}
	return strings.Join(out, " ")
}

// A session whose SessionEnd comes after its last Stop: the end is a
// harness.event after the run's end, not a run of its own, and a prompt
// after it (the session resumed) opens a new run.
func TestSessionEndAfterStop(t *testing.T) {
	b := bustest.StartBus(t)
	br, err := bridge.New(bridge.Config{Store: b})
	if err != nil {
		t.Fatal(err)
	}
	const s = "ended"
	handle(t, br, input(t, s, "SessionStart", `, "source": "startup"`))
	handle(t, br, input(t, s, "UserPromptSubmit", `, "prompt": "hi"`))
	handle(t, br, input(t, s, "Stop", `, "stop_hook_active": false, "last_assistant_message": "hello"`))
	handle(t, br, input(t, s, "SessionEnd", `, "reason": "other"`))
	if got, want := stages(t, b, bridge.DefaultAgent, s), "1:run.started 1:intake 1:stop 1:run.completed 1:harness.event"; got != want {
		t.Fatalf("session:\n got %s\nwant %s", got, want)
	}
	handle(t, br, input(t, s, "SessionStart", `, "source": "resume"`))
	handle(t, br, input(t, s, "UserPromptSubmit", `, "prompt": "again"`))
	handle(t, br, input(t, s, "SessionEnd", `, "reason": "other"`))
	if got, want := stages(t, b, bridge.DefaultAgent, s), "1:run.started 1:intake 1:stop 1:run.completed 1:harness.event 2:run.started 2:intake 2:run.completed"; got != want {
		t.Fatalf("session:\n got %s\nwant %s", got, want)
	}
}

// counting counts a Store's reads.
type counting struct {
	bridge.Store
	last, all atomic.Int64
	deadline  atomic.Int64 // ns from now of the last LastEvent's ctx deadline
}

func (c *counting) LastEvent(ctx context.Context, agent, session string, stage events.Stage) (*events.Event, error) {
	c.last.Add(1)
	if d, ok := ctx.Deadline(); ok {
		c.deadline.Store(int64(time.Until(d)))
	}
	return c.Store.LastEvent(ctx, agent, session, stage)
}

func (c *counting) SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error) {
	c.all.Add(1)
	return c.Store.SessionEvents(ctx, agent, session)
}

// An event's cost does not grow with its session: the bridge reads the
// session's last event, never the whole session, whatever its length.
func TestReadsDoNotGrow(t *testing.T) {
	b := bustest.StartBus(t)
	store := &counting{Store: b}
	br, err := bridge.New(bridge.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	const s = "long"
	handle(t, br, input(t, s, "SessionStart", `, "source": "startup"`))
	handle(t, br, input(t, s, "UserPromptSubmit", `, "prompt": "go"`))
	for i := range 200 {
		id := fmt.Sprintf("toolu_%d", i)
		handle(t, br, input(t, s, "PreToolUse", bash(id, "ls")))
		store.last.Store(0)
		handle(t, br, input(t, s, "PostToolUse", bash(id, "ls")+`, "tool_response": {"stdout": "a"}`))
		if n := store.last.Load(); n != 1 {
			t.Fatalf("event %d: %d reads of the session's last event, want 1", i, n)
		}
	}
	if n := store.all.Load(); n != 0 {
		t.Fatalf("the whole session was read %d times", n)
	}
	if got := stages(t, b, bridge.DefaultAgent, s); strings.Count(got, "tool.after") != 200 || strings.Count(got, "run.started") != 1 {
		t.Fatalf("session: %s", got)
	}
}

// The bridge's deadline fits inside the harness's limit for the event:
// Claude Code's SessionEnd (1.5 s) and MessageDisplay (10 s) are answered
// well within them whatever --timeout says.
func TestEventDeadline(t *testing.T) {
	b := bustest.StartBus(t)
	store := &counting{Store: b}
	br, err := bridge.New(bridge.Config{Store: store, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for ev, limit := range map[string]time.Duration{"SessionEnd": 1500 * time.Millisecond, "MessageDisplay": 10 * time.Second, "PreToolUse": time.Minute} {
		fields := bash("toolu_x", "ls")
		if ev != "PreToolUse" {
			fields = ""
		}
		handle(t, br, input(t, "deadline", ev, fields))
		if d := time.Duration(store.deadline.Load()); d <= 0 || d > limit {
			t.Errorf("%s: the bridge's deadline was %s away, over the harness's %s", ev, d, limit)
		}
	}
}

// Every input example of each harness's reference, sent to the bridge as
// one session: each is recorded (a stage's event, or a harness.event),
// and answered in the harness's format.
func TestReferenceSessions(t *testing.T) {
	for _, tc := range []struct {
		h   harness.Protocol
		dir string
	}{
		{claudecode.Harness{}, "../hooks/claudecode/testdata/reference"},
		{gemini.Harness{}, "../hooks/gemini/testdata/reference"},
		{codex.Harness{}, "../hooks/codex/testdata/reference"},
	} {
		t.Run(tc.h.Name(), func(t *testing.T) {
			b := bustest.StartBus(t)
			br, err := bridge.New(bridge.Config{Store: b, Harness: tc.h, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(tc.dir, "*.json"))
			sort.Strings(files)
			harnessEvents := 0
			var session string
			for _, f := range files {
				raw, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				in, err := tc.h.Parse(raw)
				if err != nil {
					t.Fatal(err)
				}
				session = in.Session()
				if m, _ := in.Map(); m == nil {
					harnessEvents++
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if strings.Contains(f, "PermissionRequest") {
					// Nobody answers here: its wait is cut short.
					ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
				}
				r, err := br.HandleInput(ctx, in)
				cancel()
				if err != nil {
					t.Fatalf("%s: %v", filepath.Base(f), err)
				}
				if r.Exit != 0 {
					t.Errorf("%s: exit %d", filepath.Base(f), r.Exit)
				}
			}
			evs, err := b.SessionEvents(context.Background(), tc.h.Agent(), session)
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, e := range evs {
				if e.Stage == events.StageHarnessEvent {
					got++
				}
			}
			// The SessionEnd after the last run's end is one more.
			if got < harnessEvents {
				t.Fatalf("%d harness events recorded, want at least %d: %s", got, harnessEvents, stages(t, b, tc.h.Agent(), session))
			}
			t.Logf("%s", stages(t, b, tc.h.Agent(), session))
		})
	}
}

// Gemini CLI's tool calls come without ids: each tool.before gets one, and
// its tool.after the same, whether the calls run one after another (the
// same command twice) or side by side.
func TestCallsWithoutIDs(t *testing.T) {
	b := bustest.StartBus(t)
	br, err := bridge.New(bridge.Config{Store: b, Harness: gemini.Harness{}})
	if err != nil {
		t.Fatal(err)
	}
	const s = "gemini-calls"
	send := func(event, fields string) {
		t.Helper()
		in, err := gemini.Harness{}.Parse([]byte(`{"session_id": "` + s + `", "transcript_path": "/t", "cwd": "/w", "timestamp": "2026-01-01T00:00:00Z", "hook_event_name": "` + event + `"` + fields + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := br.HandleInput(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	shell := func(cmd string) string {
		return `, "tool_name": "run_shell_command", "tool_input": {"command": "` + cmd + `"}`
	}
	result := func(cmd string) string {
		return shell(cmd) + `, "tool_response": {"llmContent": "out of ` + cmd + `", "returnDisplay": ""}`
	}
	send("SessionStart", `, "source": "startup"`)
	send("BeforeAgent", `, "prompt": "go"`)
	send("BeforeTool", shell("ls"))
	send("AfterTool", result("ls"))
	send("BeforeTool", shell("ls"))
	send("AfterTool", result("ls"))
	send("BeforeTool", shell("a"))
	send("BeforeTool", shell("b"))
	send("BeforeTool", shell("b"))
	send("AfterTool", result("a"))
	send("AfterTool", result("b"))
	send("AfterTool", result("b"))
	evs, err := b.SessionEvents(context.Background(), gemini.DefaultAgent, s)
	if err != nil {
		t.Fatal(err)
	}
	befores := map[string]string{} // call id → command
	var afters []string
	for _, e := range evs {
		switch e.Stage {
		case events.StageToolBefore:
			p, _ := events.Data[events.ToolBefore](e)
			if p.Call.ID == "" || befores[p.Call.ID] != "" {
				t.Fatalf("tool.before with call id %q: %s", p.Call.ID, e.Data)
			}
			befores[p.Call.ID] = string(p.Call.Arguments)
		case events.StageToolAfter:
			p, _ := events.Data[events.ToolAfter](e)
			if befores[p.Call.ID] != string(p.Call.Arguments) || p.Result.CallID != p.Call.ID || slices.Contains(afters, p.Call.ID) {
				t.Fatalf("tool.after of call %q (%s) pairs with no open tool.before: %v", p.Call.ID, p.Call.Arguments, befores)
			}
			afters = append(afters, p.Call.ID)
		}
	}
	if len(befores) != 5 || len(afters) != 5 {
		t.Fatalf("%d calls, %d ends: %s", len(befores), len(afters), stages(t, b, gemini.DefaultAgent, s))
	}
}
