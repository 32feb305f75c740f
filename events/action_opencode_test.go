package events_test

import (
	"encoding/json"
	"testing"

	"github.com/hookbus/hookbus/events"
)

// OpenCode's and Kilo Code's tools, as their plugins name them.
func TestNewActionOpenCode(t *testing.T) {
	for _, h := range []events.Harness{events.HarnessOpenCode, events.HarnessKilo} {
		for _, tc := range []struct {
			name, args string
			want       events.Action
		}{
			{"bash", `{"command":"rm -rf victim","description":"Remove"}`, events.Action{Kind: events.KindShell, Command: "rm -rf victim"}},
			{"read", `{"filePath":"/p/.env"}`, events.Action{Kind: events.KindFileRead, Paths: []string{"/p/.env"}}},
			{"write", `{"filePath":"/p/a","content":"x"}`, events.Action{Kind: events.KindFileWrite, Paths: []string{"/p/a"}}},
			{"edit", `{"filePath":"/p/a","oldString":"a","newString":"b"}`, events.Action{Kind: events.KindFileEdit, Paths: []string{"/p/a"}}},
			{"glob", `{"pattern":"**/*.go","path":"src"}`, events.Action{Kind: events.KindFileSearch, Query: "**/*.go", Paths: []string{"src"}}},
			{"webfetch", `{"url":"https://example.com","format":"text"}`, events.Action{Kind: events.KindWebFetch, URL: "https://example.com"}},
			{"task", `{"description":"x","prompt":"y","subagent_type":"general"}`, events.Action{Kind: events.KindAgent}},
			{"todowrite", `{"todos":[]}`, events.Action{Kind: events.KindOther}},
			{"mcp__github__search", `{}`, events.Action{Kind: events.KindMCP, Server: "github", MCPTool: "search"}},
			{"github_search", `{}`, events.Action{Kind: events.KindOther}},
		} {
			got := events.NewAction(h, tc.name, json.RawMessage(tc.args))
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tc.want)
			if string(gb) != string(wb) {
				t.Errorf("%s %s: %s, want %s", h, tc.name, gb, wb)
			}
		}
	}
}
