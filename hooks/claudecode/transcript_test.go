package claudecode_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

// runSession runs one scripted run of agent in session on j.
func runSession(t *testing.T, j *looptest.Journal, agent, session, prompt string) {
	t.Helper()
	script := &scripted.Script{Replies: []scripted.Reply{
		{Content: "Let me compute.", ToolCalls: []scripted.ToolCall{{Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}},
		{Content: "It is {{tool:calculator}}."},
	}}
	eng, err := loop.New(loop.Config{Emitter: j, History: j, Model: scripted.New(script), Tools: []loop.Tool{tools.Calculator()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Run(context.Background(), &events.RunRequest{RunID: events.NewID(), AgentID: agent, SessionID: session, Prompt: prompt}); err != nil {
		t.Fatal(err)
	}
}

type line struct {
	Type       string  `json:"type"`
	SessionID  string  `json:"sessionId"`
	UUID       string  `json:"uuid"`
	ParentUUID *string `json:"parentUuid"`
	Cwd        string  `json:"cwd"`
	Message    struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

func readTranscript(t *testing.T, path string) []line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []line
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// A transcript is the session's conversation in Claude Code's JSONL format,
// and holds that session only.
func TestTranscripts(t *testing.T) {
	j := looptest.New()
	runSession(t, j, "coder", "s-one", "first secret prompt")
	runSession(t, j, "coder", "s-two", "second prompt")
	runSession(t, j, "other", "s-one", "another agent's prompt")
	td, err := claudecode.NewTranscripts(loop.Conversations{History: j}, "")
	if err != nil {
		t.Fatal(err)
	}
	td.WithCwd(func(agent string) string { return "/roots/" + agent })
	defer func() {
		dir := td.Dir()
		if err := td.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("Close left %s (%v)", dir, err)
		}
	}()
	ctx := context.Background()
	one, err := td.Path(ctx, "coder", "s-one")
	if err != nil {
		t.Fatal(err)
	}
	two, err := td.Path(ctx, "coder", "s-two")
	if err != nil {
		t.Fatal(err)
	}
	other, err := td.Path(ctx, "other", "s-one")
	if err != nil {
		t.Fatal(err)
	}
	if one == two || one == other || !strings.HasPrefix(one, td.Dir()) {
		t.Fatalf("paths %s %s %s", one, two, other)
	}
	lines := readTranscript(t, one)
	types := []string{}
	for _, l := range lines {
		types = append(types, l.Type+"/"+l.Message.Role)
		if l.SessionID != "s-one" || l.Cwd != "/roots/coder" {
			t.Errorf("line of session %q, cwd %q", l.SessionID, l.Cwd)
		}
	}
	if got := strings.Join(types, " "); got != "user/user assistant/assistant user/user assistant/assistant" {
		t.Fatalf("lines %s", got)
	}
	if string(lines[0].Message.Content) != `"first secret prompt"` || lines[0].ParentUUID != nil || *lines[1].ParentUUID != lines[0].UUID {
		t.Fatalf("first lines %+v %+v", lines[0], lines[1])
	}
	var blocks []map[string]any
	if err := json.Unmarshal(lines[1].Message.Content, &blocks); err != nil || len(blocks) != 2 || blocks[1]["type"] != "tool_use" || blocks[1]["name"] != "calculator" {
		t.Fatalf("assistant blocks %s", lines[1].Message.Content)
	}
	if err := json.Unmarshal(lines[2].Message.Content, &blocks); err != nil || blocks[0]["type"] != "tool_result" || blocks[0]["content"] != "42" {
		t.Fatalf("tool result blocks %s", lines[2].Message.Content)
	}
	for _, p := range []string{two, other} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "first secret prompt") {
			t.Fatalf("%s holds another session's prompt", p)
		}
	}
	// A later write keeps the uuids and adds the new run.
	runSession(t, j, "coder", "s-one", "again")
	if _, err := td.Path(ctx, "coder", "s-one"); err != nil {
		t.Fatal(err)
	}
	again := readTranscript(t, one)
	if len(again) != 8 || again[0].UUID != lines[0].UUID || string(again[4].Message.Content) != `"again"` {
		t.Fatalf("rewritten transcript: %d lines", len(again))
	}
}

// Ids cannot name paths outside their own file.
func TestTranscriptPathsStayInside(t *testing.T) {
	j := looptest.New()
	td, err := claudecode.NewTranscripts(loop.Conversations{History: j}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"a/b", "%2F%2Fx", "/etc/passwd", "a\\b"} {
		p, err := td.Path(ctx, id, id)
		if err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		if rel, err := filepath.Rel(td.Dir(), p); err != nil || strings.HasPrefix(rel, "..") || strings.Count(rel, string(filepath.Separator)) != 1 {
			t.Fatalf("id %q: path %s is not a file of a directory of %s", id, p, td.Dir())
		}
	}
	if _, err := td.Path(ctx, "a.b", "s"); err == nil {
		t.Fatal("an invalid agent id was written")
	}
}
