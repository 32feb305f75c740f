package claudecode_test

import (
	"encoding/json"
	"fmt"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
)

// A hook's answer read as a decision: exit status 2 blocks a tool call
// with stderr as the reason.
func ExampleDecide() {
	ev, _ := events.New(events.StageToolBefore, events.Meta{Source: "example", AgentID: "coder", SessionID: "s1", RunID: "r1", Subject: "Bash"},
		events.ToolBefore{Call: events.ToolCall{ID: "toolu_1", Name: "Bash", Arguments: json.RawMessage(`{"command":"rm -rf /"}`)}})

	in, _ := claudecode.NewInput(claudecode.PreToolUse, ev, claudecode.Env{Cwd: "/repo"})
	b, _ := json.Marshal(in)
	fmt.Println(string(b))

	d, _ := claudecode.Decide(claudecode.PreToolUse, ev, claudecode.Reply{ExitCode: 2, Stderr: []byte("rm -rf is blocked\n")})
	fmt.Println(d.Kind, d.Reason)
	// Output:
	// {"session_id":"s1","transcript_path":"","cwd":"/repo","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"toolu_1"}
	// deny rm -rf is blocked
}

// Claude Code's matchers: exact names, or a regular expression.
func ExampleParseMatcher() {
	for _, m := range []string{"Edit|Write", "mcp__memory__.*", "*"} {
		p, _ := claudecode.ParseMatcher(m)
		fmt.Printf("%-16s tools=%-20q MultiEdit:%v mcp__memory__store:%v\n", m, p.Tools(), p.Match("MultiEdit"), p.Match("mcp__memory__store"))
	}
	// Output:
	// Edit|Write       tools="Edit|Write"         MultiEdit:false mcp__memory__store:false
	// mcp__memory__.*  tools="re:mcp__memory__.*" MultiEdit:false mcp__memory__store:true
	// *                tools=""                   MultiEdit:true mcp__memory__store:true
}
