package events_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hookbus/hookbus/events"
)

// Every harness's tools normalize to their kind and fields; a tool no
// table maps is other, never dropped.
func TestNewAction(t *testing.T) {
	const patch = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** Update File: src/main.go\n@@\n-a\n+b\n*** Delete File: old.txt\n*** End Patch\n"
	patchJSON, _ := json.Marshal(patch)
	argvPatch, _ := json.Marshal([]string{"apply_patch", patch})
	for _, tc := range []struct {
		h    events.Harness
		name string
		args string
		want events.Action
	}{
		// hookbus' own agent (loop/tools, the demo tools, MCP, Task).
		{events.HarnessHookbus, "Bash", `{"command":"rm -rf /tmp/x"}`, events.Action{Kind: events.KindShell, Command: "rm -rf /tmp/x"}},
		{events.HarnessHookbus, "Read", `{"file_path":"a.go"}`, events.Action{Kind: events.KindFileRead, Paths: []string{"a.go"}}},
		{events.HarnessHookbus, "read_file", `{"path":"notes.txt"}`, events.Action{Kind: events.KindFileRead, Paths: []string{"notes.txt"}}},
		{events.HarnessHookbus, "Write", `{"file_path":"b.go","content":"x"}`, events.Action{Kind: events.KindFileWrite, Paths: []string{"b.go"}}},
		{events.HarnessHookbus, "Edit", `{"file_path":"c.go","old_string":"a","new_string":"b"}`, events.Action{Kind: events.KindFileEdit, Paths: []string{"c.go"}}},
		{events.HarnessHookbus, "Glob", `{"pattern":"**/*.go","path":"src"}`, events.Action{Kind: events.KindFileSearch, Query: "**/*.go", Paths: []string{"src"}}},
		{events.HarnessHookbus, "Grep", `{"pattern":"TODO"}`, events.Action{Kind: events.KindFileSearch, Query: "TODO"}},
		{events.HarnessHookbus, "clock", `{}`, events.Action{Kind: events.KindOther}},
		{events.HarnessHookbus, "calculator", `{"expression":"6*7"}`, events.Action{Kind: events.KindOther}},
		{events.HarnessHookbus, "Task", `{"subagent_type":"researcher","prompt":"x"}`, events.Action{Kind: events.KindAgent}},
		{events.HarnessHookbus, "mcp__github__search_repositories", `{"query":"x"}`, events.Action{Kind: events.KindMCP, Server: "github", MCPTool: "search_repositories"}},
		{events.HarnessHookbus, "lookup_order", `{"id":"7"}`, events.Action{Kind: events.KindOther}},
		// Claude Code.
		{events.HarnessClaude, "Bash", `{"command":"ls -la"}`, events.Action{Kind: events.KindShell, Command: "ls -la"}},
		{events.HarnessClaude, "Read", `{"file_path":"/p/.env"}`, events.Action{Kind: events.KindFileRead, Paths: []string{"/p/.env"}}},
		{events.HarnessClaude, "Write", `{"file_path":"/p/a"}`, events.Action{Kind: events.KindFileWrite, Paths: []string{"/p/a"}}},
		{events.HarnessClaude, "Edit", `{"file_path":"/p/a"}`, events.Action{Kind: events.KindFileEdit, Paths: []string{"/p/a"}}},
		{events.HarnessClaude, "MultiEdit", `{"file_path":"/p/a","edits":[]}`, events.Action{Kind: events.KindFileEdit, Paths: []string{"/p/a"}}},
		{events.HarnessClaude, "NotebookEdit", `{"notebook_path":"/p/n.ipynb"}`, events.Action{Kind: events.KindFileEdit, Paths: []string{"/p/n.ipynb"}}},
		{events.HarnessClaude, "Glob", `{"pattern":"*.md"}`, events.Action{Kind: events.KindFileSearch, Query: "*.md"}},
		{events.HarnessClaude, "Grep", `{"pattern":"key","path":"/p"}`, events.Action{Kind: events.KindFileSearch, Query: "key", Paths: []string{"/p"}}},
		{events.HarnessClaude, "WebFetch", `{"url":"https://example.com/a","prompt":"sum"}`, events.Action{Kind: events.KindWebFetch, URL: "https://example.com/a"}},
		{events.HarnessClaude, "WebSearch", `{"query":"nats"}`, events.Action{Kind: events.KindWebSearch, Query: "nats"}},
		{events.HarnessClaude, "Task", `{"subagent_type":"x"}`, events.Action{Kind: events.KindAgent}},
		{events.HarnessClaude, "mcp__fs__write", `{}`, events.Action{Kind: events.KindMCP, Server: "fs", MCPTool: "write"}},
		{events.HarnessClaude, "TodoWrite", `{"todos":[]}`, events.Action{Kind: events.KindOther}},
		// Gemini CLI.
		{events.HarnessGemini, "run_shell_command", `{"command":"rm -rf victim","description":"d"}`, events.Action{Kind: events.KindShell, Command: "rm -rf victim"}},
		{events.HarnessGemini, "read_file", `{"absolute_path":"/p/a"}`, events.Action{Kind: events.KindFileRead, Paths: []string{"/p/a"}}},
		{events.HarnessGemini, "read_file", `{"file_path":"/p/b"}`, events.Action{Kind: events.KindFileRead, Paths: []string{"/p/b"}}},
		{events.HarnessGemini, "read_many_files", `{"paths":["a","b"]}`, events.Action{Kind: events.KindFileRead, Paths: []string{"a", "b"}}},
		{events.HarnessGemini, "write_file", `{"file_path":"/p/a","content":"x"}`, events.Action{Kind: events.KindFileWrite, Paths: []string{"/p/a"}}},
		{events.HarnessGemini, "replace", `{"file_path":"/p/a","old_string":"x","new_string":"y"}`, events.Action{Kind: events.KindFileEdit, Paths: []string{"/p/a"}}},
		{events.HarnessGemini, "glob", `{"pattern":"*.go"}`, events.Action{Kind: events.KindFileSearch, Query: "*.go"}},
		{events.HarnessGemini, "search_file_content", `{"pattern":"x","path":"/p"}`, events.Action{Kind: events.KindFileSearch, Query: "x", Paths: []string{"/p"}}},
		{events.HarnessGemini, "grep", `{"pattern":"x"}`, events.Action{Kind: events.KindFileSearch, Query: "x"}},
		{events.HarnessGemini, "list_directory", `{"path":"/p"}`, events.Action{Kind: events.KindFileSearch, Paths: []string{"/p"}}},
		{events.HarnessGemini, "web_fetch", `{"prompt":"Summarize https://example.com/page and more"}`, events.Action{Kind: events.KindWebFetch, URL: "https://example.com/page"}},
		{events.HarnessGemini, "google_web_search", `{"query":"cel-go"}`, events.Action{Kind: events.KindWebSearch, Query: "cel-go"}},
		{events.HarnessGemini, "github__search_repositories", `{}`, events.Action{Kind: events.KindMCP, Server: "github", MCPTool: "search_repositories"}},
		{events.HarnessGemini, "save_memory", `{"fact":"x"}`, events.Action{Kind: events.KindOther}},
		// Codex CLI.
		{events.HarnessCodex, "Bash", `{"command":"touch original.txt"}`, events.Action{Kind: events.KindShell, Command: "touch original.txt"}},
		{events.HarnessCodex, "shell", `{"command":["bash","-lc","rm -rf victim"]}`, events.Action{Kind: events.KindShell, Command: "bash -lc rm -rf victim"}},
		{events.HarnessCodex, "shell", `{"command":"rm -rf victim"}`, events.Action{Kind: events.KindShell, Command: "rm -rf victim"}},
		{events.HarnessCodex, "apply_patch", `{"input":` + string(patchJSON) + `}`, events.Action{Kind: events.KindFileEdit, Paths: []string{"hello.txt", "src/main.go", "old.txt"}}},
		{events.HarnessCodex, "apply_patch", `{"command":` + string(argvPatch) + `}`, events.Action{Kind: events.KindFileEdit, Paths: []string{"hello.txt", "src/main.go", "old.txt"}}},
		{events.HarnessCodex, "mcp__linear__create_issue", `{}`, events.Action{Kind: events.KindMCP, Server: "linear", MCPTool: "create_issue"}},
		{events.HarnessCodex, "update_plan", `{}`, events.Action{Kind: events.KindOther}},
		{events.HarnessCodex, "brand_new_tool", `{}`, events.Action{Kind: events.KindOther}},
		// GitHub Copilot CLI, Qwen Code, Factory Droid, Cline.
		{events.HarnessCopilot, "bash", `{"command":"rm -rf victim","description":"x"}`, events.Action{Kind: events.KindShell, Command: "rm -rf victim"}},
		{events.HarnessCopilot, "Bash", `{"command":"ls"}`, events.Action{Kind: events.KindShell, Command: "ls"}},
		{events.HarnessCopilot, "create", `{"path":"/p/a","file_text":"x"}`, events.Action{Kind: events.KindFileWrite, Paths: []string{"/p/a"}}},
		{events.HarnessCopilot, "grep", `{"pattern":"x","paths":["/p","/q"]}`, events.Action{Kind: events.KindFileSearch, Query: "x", Paths: []string{"/p", "/q"}}},
		{events.HarnessQwen, "run_shell_command", `{"command":"rm -rf victim"}`, events.Action{Kind: events.KindShell, Command: "rm -rf victim"}},
		{events.HarnessQwen, "edit", `{"file_path":"/p/a","old_string":"x","new_string":"y"}`, events.Action{Kind: events.KindFileEdit, Paths: []string{"/p/a"}}},
		{events.HarnessQwen, "grep_search", `{"pattern":"x","path":"/p"}`, events.Action{Kind: events.KindFileSearch, Query: "x", Paths: []string{"/p"}}},
		{events.HarnessFactory, "Execute", `{"command":"rm -rf victim","riskLevel":"high"}`, events.Action{Kind: events.KindShell, Command: "rm -rf victim"}},
		{events.HarnessFactory, "Create", `{"file_path":"/p/a","content":"x"}`, events.Action{Kind: events.KindFileWrite, Paths: []string{"/p/a"}}},
		{events.HarnessFactory, "LS", `{"directory_path":"/p"}`, events.Action{Kind: events.KindFileSearch, Paths: []string{"/p"}}},
		{events.HarnessFactory, "Glob", `{"patterns":["*.go","*.md"],"folder":"/p"}`, events.Action{Kind: events.KindFileSearch, Query: "*.go *.md", Paths: []string{"/p"}}},
		{events.HarnessCline, "run_commands", `{"commands":["rm -rf victim","ls"]}`, events.Action{Kind: events.KindShell, Command: "rm -rf victim\nls"}},
		{events.HarnessCline, "read_files", `{"files":[{"path":"/p/a"},"/p/b"]}`, events.Action{Kind: events.KindFileRead, Paths: []string{"/p/a", "/p/b"}}},
		{events.HarnessCline, "editor", `{"path":"/p/a","old_text":"x","new_text":"y"}`, events.Action{Kind: events.KindFileEdit, Paths: []string{"/p/a"}}},
		{events.HarnessCline, "fetch_web_content", `{"requests":[{"url":"https://example.com","prompt":"x"}]}`, events.Action{Kind: events.KindWebFetch, URL: "https://example.com"}},
		{events.HarnessCline, "team_status", `{}`, events.Action{Kind: events.KindOther}},
		// A harness with no table, and arguments that are not an object.
		{events.Harness("aider"), "Bash", `{"command":"ls"}`, events.Action{Kind: events.KindOther}},
		{events.HarnessClaude, "Bash", `"ls"`, events.Action{Kind: events.KindShell}},
		{events.HarnessClaude, "Bash", ``, events.Action{Kind: events.KindShell}},
		{events.HarnessClaude, "mcp__", `{}`, events.Action{Kind: events.KindOther}},
	} {
		got := events.NewAction(tc.h, tc.name, json.RawMessage(tc.args))
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s %s: got %+v, want %+v", tc.h, tc.name, tc.args, got, tc.want)
		}
		if !got.Kind.Valid() {
			t.Errorf("%s %s: kind %q is not valid", tc.h, tc.name, got.Kind)
		}
	}
}

// The action rides in the call's JSON beside its native name and
// arguments, which stay as they were; the kind reads back from the data.
func TestToolCallCarriesAction(t *testing.T) {
	args := json.RawMessage(`{"command":"rm -rf victim"}`)
	call := events.ToolCall{ID: "c1", Name: "run_shell_command", Arguments: args}.WithAction(events.HarnessGemini)
	e, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r", Subject: call.Name}, events.ToolBefore{Call: call})
	if err != nil {
		t.Fatal(err)
	}
	if got := events.CallKind(e.Data); got != events.KindShell {
		t.Errorf("CallKind = %q, want shell", got)
	}
	back, err := events.Data[events.ToolBefore](e)
	if err != nil {
		t.Fatal(err)
	}
	if back.Call.Name != "run_shell_command" || string(back.Call.Arguments) != string(args) || back.Call.Kind() != events.KindShell || back.Call.Action.Command != "rm -rf victim" {
		t.Errorf("call read back as %+v (action %+v)", back.Call, back.Call.Action)
	}
	if got := events.CallKind(json.RawMessage(`{"call":{"name":"Bash"}}`)); got != "" {
		t.Errorf("CallKind without an action = %q, want empty", got)
	}
}

func TestKinds(t *testing.T) {
	for _, k := range events.ActionKinds() {
		if !k.Valid() {
			t.Errorf("%q not valid", k)
		}
	}
	if events.ActionKind("bash").Valid() || events.ActionKind("").Valid() {
		t.Error("a word that is no kind is valid")
	}
}
