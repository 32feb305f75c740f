package command_test

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
	"github.com/hookbus/hookbus/hooks/command"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

// Scripts written for Claude Code, as people write them.
const (
	// Claude Code's documented example: deny rm -rf with JSON output.
	blockRmJQ = `#!/bin/bash
COMMAND=$(jq -r '.tool_input.command')
if echo "$COMMAND" | grep -q 'rm -rf'; then
  jq -n '{
    hookSpecificOutput: {
      hookEventName: "PreToolUse",
      permissionDecision: "deny",
      permissionDecisionReason: "Destructive command blocked by hook"
    }
  }'
else
  exit 0
fi
`
	// The same with no jq: exit 2 and a reason on stderr.
	blockRmSh = `#!/bin/sh
if grep -q 'rm -rf'; then
  echo "Blocked: rm -rf is not allowed here" >&2
  exit 2
fi
exit 0
`
	// Tell the model what to do after it edits a file.
	afterEdit = `#!/bin/bash
FILE=$(jq -r '.tool_input.file_path')
jq -n --arg f "$FILE" '{hookSpecificOutput: {hookEventName: "PostToolUse", additionalContext: ("Edited " + $f + ": remember to run the tests")}}'
`
	settingsJSON = `{
  "permissions": {"allow": ["Bash(go test:*)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/block-rm.sh"}]}
    ],
    "PostToolUse": [
      {"matcher": "*", "hooks": [{"type": "command", "command": "jq -c '{tool: .tool_name, input: .tool_input, transcript: .transcript_path}' >> \"$CLAUDE_PROJECT_DIR\"/.claude/tool-log.jsonl"}]},
      {"matcher": "Edit|MultiEdit|Write", "hooks": [{"type": "command", "command": ".claude/hooks/after-edit.sh", "timeout": 30}]}
    ],
    "SessionEnd": [
      {"hooks": [{"type": "command", "command": "jq -r .reason > .claude/session-ended"}]}
    ]
  }
}`
)

// Claude Code hook scripts run unchanged on a hookbus agent: loaded from a
// settings.json, on the loop engine with the Bash and Edit tools.
func TestClaudeCodeScriptsUnchanged(t *testing.T) {
	needJQ(t)
	for name, block := range map[string]struct{ script, reason string }{
		"jq": {blockRmJQ, "Destructive command blocked by hook"},
		"sh": {blockRmSh, "Blocked: rm -rf is not allowed here"},
	} {
		t.Run(name, func(t *testing.T) { scriptsOnAgent(t, block.script, block.reason) })
	}
}

func scriptsOnAgent(t *testing.T, blockScript, blockReason string) {
	root := t.TempDir()
	for path, content := range map[string]string{
		".claude/settings.json":       settingsJSON,
		".claude/hooks/block-rm.sh":   blockScript,
		".claude/hooks/after-edit.sh": afterEdit,
		"build/keep":                  "do not delete",
		"main.go":                     "package main // old\n",
	} {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	j := looptest.New()
	transcripts, err := claudecode.NewTranscripts(loop.Conversations{History: j}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = transcripts.Close() })
	s, err := claudecode.LoadSettings(filepath.Join(root, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	chain := interceptors.NewChain()
	hooks, err := claudecode.Register(chain, []*claudecode.Settings{s}, claudecode.Options{Factories: map[string]claudecode.Factory{
		claudecode.TypeCommand: command.Factory(command.Config{Root: root, Transcripts: transcripts}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := tools.ByNames([]string{"Bash", "Edit"}, tools.Config{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(&scripted.Script{Replies: []scripted.Reply{
		{Content: "Cleaning up.", ToolCalls: []scripted.ToolCall{{Name: "Bash", Arguments: json.RawMessage(`{"command":"rm -rf build"}`)}}},
		{Content: "Fine, just listing.", ToolCalls: []scripted.ToolCall{{Name: "Bash", Arguments: json.RawMessage(`{"command":"echo hello"}`)}}},
		{Content: "Editing.", ToolCalls: []scripted.ToolCall{{Name: "Edit", Arguments: json.RawMessage(`{"file_path":"main.go","old_string":"old","new_string":"new"}`)}}},
		{Content: "Done."},
	}})
	eng, err := loop.New(loop.Config{Emitter: hooks.Emitter(j), History: j, Model: model, Tools: ts, Hooks: chain})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(context.Background(), &events.RunRequest{RunID: events.NewID(), AgentID: "coder", SessionID: "s1", Prompt: "tidy the repo"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != events.ReasonDone || res.Answer != "Done." {
		t.Fatalf("run ended %s %q (%s)", res.Reason, res.Answer, res.Detail)
	}

	// rm -rf was denied with the script's reason, and did not run.
	if _, err := os.Stat(filepath.Join(root, "build", "keep")); err != nil {
		t.Fatalf("rm -rf ran: %v", err)
	}
	var denied, edited *events.ToolAfter
	var decided []events.HookDecided
	for _, e := range j.Events() {
		switch e.Stage {
		case events.StageToolAfter:
			var p events.ToolAfter
			if err := e.DecodeData(&p); err != nil {
				t.Fatal(err)
			}
			switch p.Call.Name + ":" + string(p.Call.Arguments) {
			case `Bash:{"command":"rm -rf build"}`:
				denied = &p
			case `Edit:{"file_path":"main.go","old_string":"old","new_string":"new"}`:
				edited = &p
			}
		case events.StageHookDecided:
			var d events.HookDecided
			if err := e.DecodeData(&d); err != nil {
				t.Fatal(err)
			}
			decided = append(decided, d)
		}
	}
	if denied == nil || !denied.Result.IsError || !strings.Contains(denied.Result.Content, blockReason) {
		t.Fatalf("the rm -rf call's result: %+v", denied)
	}
	if len(decided) == 0 || decided[0].Stage != events.StageToolBefore || decided[0].Decision != "deny" || decided[0].Reason != blockReason || decided[0].Plugin != "claude-PreToolUse-0-0" {
		t.Fatalf("first hook.decided %+v", decided)
	}
	// The PostToolUse hooks did not run on the denied call, and the audit
	// says so.
	notRun := 0
	for _, d := range decided {
		if d.Stage == events.StageToolAfter && d.Annotations["not_run"] != "" {
			notRun++
		}
	}
	if notRun != 1 {
		t.Fatalf("%d hook.decided say a PostToolUse hook did not run, want 1 (the log hook on the denied call): %+v", notRun, decided)
	}
	// The edit ran, and the model was told what the PostToolUse hook said.
	if b, _ := os.ReadFile(filepath.Join(root, "main.go")); string(b) != "package main // new\n" {
		t.Fatalf("main.go: %q", b)
	}
	if edited == nil || edited.Context != "Edited main.go: remember to run the tests" {
		t.Fatalf("the edit's tool.after: %+v", edited)
	}
	// Every tool call that ran was logged (the denied one did not run:
	// Claude Code runs no PostToolUse hook for it), with a transcript of
	// this session.
	f, err := os.Open(filepath.Join(root, ".claude", "tool-log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var logged []string
	var transcript string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Tool       string          `json:"tool"`
			Input      json.RawMessage `json:"input"`
			Transcript string          `json:"transcript"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		logged = append(logged, l.Tool+" "+string(l.Input))
		transcript = l.Transcript
	}
	if strings.Join(logged, "\n") != `Bash {"command":"echo hello"}`+"\n"+`Edit {"file_path":"main.go","old_string":"old","new_string":"new"}` {
		t.Fatalf("tool log:\n%s", strings.Join(logged, "\n"))
	}
	if b, err := os.ReadFile(transcript); err != nil || !strings.Contains(string(b), `"content":"tidy the repo"`) || !strings.Contains(string(b), `"name":"Edit"`) {
		t.Fatalf("transcript %s: %v\n%s", transcript, err, b)
	}
	// SessionEnd ran at the end of the run.
	if b, err := os.ReadFile(filepath.Join(root, ".claude", "session-ended")); err != nil || strings.TrimSpace(string(b)) != "other" {
		t.Fatalf("SessionEnd: %q %v", b, err)
	}
}
