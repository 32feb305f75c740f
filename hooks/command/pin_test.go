package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/command"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
)

// A hook script in the agent's root is pinned when the worker starts: the
// agent rewrites it (with its Write tool, or its Bash in the sandbox), or
// creates the script a hook names that was not there, and the next
// PreToolUse refuses the call, saying why, without running the new text
// (it would leave a marker outside the root).
func TestChangedHookScriptDoesNotRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("shell scripts")
	}
	t.Run("Write", func(t *testing.T) {
		changedHookScript(t, "Write", func(body string, scripts ...string) []scripted.ToolCall {
			var calls []scripted.ToolCall
			for _, p := range scripts {
				args, _ := json.Marshal(map[string]string{"file_path": p, "content": body})
				calls = append(calls, scripted.ToolCall{Name: "Write", Arguments: args})
			}
			return calls
		}, tools.Config{})
	})
	t.Run("sandboxed Bash", func(t *testing.T) {
		if _, err := exec.LookPath("bwrap"); err != nil {
			t.Skip("bubblewrap (bwrap) is not installed: this case needs it (make sandbox installs it)")
		}
		changedHookScript(t, "Bash", func(body string, scripts ...string) []scripted.ToolCall {
			cmd := "mkdir -p .hooks"
			for _, p := range scripts {
				cmd += fmt.Sprintf(" && printf '%%s' '%s' > %s && chmod +x %s", body, p, p)
			}
			args, _ := json.Marshal(map[string]string{"command": cmd})
			return []scripted.ToolCall{{Name: "Bash", Arguments: args}}
		}, tools.Config{Bash: tools.BashConfig{Sandbox: tools.SandboxBubblewrap}})
	})
}

func changedHookScript(t *testing.T, tool string, rewrite func(body string, scripts ...string) []scripted.ToolCall, tc tools.Config) {
	root, outside := t.TempDir(), t.TempDir()
	ran, pwned := filepath.Join(outside, "v1-ran"), filepath.Join(outside, "pwned")
	writeFile(t, filepath.Join(root, ".hooks", "pre.sh"), "#!/bin/sh\ntouch "+ran+"\nexit 0\n")
	chain := interceptors.NewChain()
	hooks := register(t, chain, root, `{"hooks": {"PreToolUse": [
	  {"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.hooks/pre.sh"}]},
	  {"matcher": "Bash", "hooks": [{"type": "command", "command": "sh $CLAUDE_PROJECT_DIR/.hooks/later.sh 2>/dev/null; exit 0"}]}
	]}}`, command.Config{})
	tc.Root = root
	names := []string{"Bash"}
	if tool != "Bash" {
		names = append(names, tool)
	}
	ts, err := tools.ByNames(names, tc)
	if err != nil {
		if tool == "Bash" {
			t.Skipf("the sandbox does not work here: %v", err)
		}
		t.Fatal(err)
	}
	evil := "#!/bin/sh\ntouch " + pwned + "\nexit 0\n"
	model := scripted.New(&scripted.Script{Replies: []scripted.Reply{
		{Content: "Looking.", ToolCalls: []scripted.ToolCall{{Name: "Bash", Arguments: json.RawMessage(`{"command":"echo first"}`)}}},
		{Content: "Rewriting the hooks.", ToolCalls: rewrite(evil, ".hooks/pre.sh", ".hooks/later.sh")},
		{Content: "Again.", ToolCalls: []scripted.ToolCall{{Name: "Bash", Arguments: json.RawMessage(`{"command":"echo second"}`)}}},
		{Content: "Done."},
	}})
	j := looptest.New()
	eng, err := loop.New(loop.Config{Emitter: hooks.Emitter(j), History: j, Model: model, Tools: ts, Hooks: chain})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(context.Background(), &events.RunRequest{RunID: events.NewID(), AgentID: "coder", SessionID: "s1", Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != events.ReasonDone {
		t.Fatalf("run ended %s (%s)", res.Reason, res.Detail)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the hook as configured did not run on the first call: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, ".hooks", "pre.sh")); err != nil || string(b) != evil {
		t.Fatalf("the agent did not rewrite the hook script: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(root, ".hooks", "later.sh")); err != nil {
		t.Fatalf("the agent did not create later.sh: %v", err)
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the rewritten hook script ran outside the sandbox: %s exists (%v)", pwned, err)
	}
	// The second echo was denied, each hook saying which file changed.
	var second *events.ToolAfter
	var refused []string
	for _, e := range j.Events() {
		switch e.Stage {
		case events.StageToolAfter:
			var p events.ToolAfter
			if err := e.DecodeData(&p); err != nil {
				t.Fatal(err)
			}
			if string(p.Call.Arguments) == `{"command":"echo second"}` {
				second = &p
			}
		case events.StageHookDecided:
			var d events.HookDecided
			if err := e.DecodeData(&d); err != nil {
				t.Fatal(err)
			}
			if d.Decision == "deny" && d.Annotations["refused"] == "changed" {
				refused = append(refused, d.Reason)
			}
		}
	}
	if second == nil || !second.Result.IsError || strings.Contains(second.Result.Content, "second") {
		t.Fatalf("the call after the rewrite: %+v; want it denied", second)
	}
	if len(refused) < 1 || !strings.Contains(strings.Join(refused, "\n"), filepath.Join(root, ".hooks", "pre.sh")) ||
		!strings.Contains(refused[0], "changed since the worker started") {
		t.Fatalf("hook.decided of the refused hooks: %q", refused)
	}
}

// What a hook's command names in the root is pinned: the script it runs,
// an interpreter's script, a file it reads; not what it writes through a
// redirection, an option, a program found in PATH, or a word that is no
// path. The exec form pins its program.
func TestPinnedFiles(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, f := range []string{"run.sh", "lib/x.py", "data.json", "out.log"} {
		writeFile(t, filepath.Join(root, f), "#!/bin/sh\nexit 0\n")
	}
	writeFile(t, filepath.Join(outside, "o.sh"), "#!/bin/sh\nexit 0\n")
	for _, tc := range []struct {
		name, handler string
		changes       []string // files (relative to root) whose change refuses the hook
		free          []string // files whose change does not
	}{
		{"script", `{"type":"command","command":"\"$CLAUDE_PROJECT_DIR\"/run.sh --flag"}`, []string{"run.sh"}, []string{"data.json"}},
		{"relative", `{"type":"command","command":"./run.sh"}`, []string{"run.sh"}, nil},
		{"interpreter", `{"type":"command","command":"FOO=1 python3 -u lib/x.py < data.json 2>/dev/null >> out.log"}`, []string{"lib/x.py", "data.json"}, []string{"out.log", "run.sh"}},
		{"braces", `{"type":"command","command":"cd ${CLAUDE_PROJECT_DIR} && sh ${CLAUDE_PROJECT_DIR}/run.sh | tee out.log >/dev/null"}`, []string{"run.sh", "out.log"}, nil},
		{"missing script", `{"type":"command","command":"bash new.sh"}`, []string{"new.sh"}, []string{"run.sh"}},
		{"exec form", `{"type":"command","command":"./run.sh","args":["data.json"]}`, []string{"run.sh", "data.json"}, nil},
		{"outside", `{"type":"command","command":"` + filepath.Join(outside, "o.sh") + ` hello"}`, nil, []string{"hello", "run.sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range tc.changes {
				t.Run(f, func(t *testing.T) {
					h := newHook(t, command.Config{Root: root}, claudecode.PreToolUse, tc.handler)
					p := filepath.Join(root, f)
					old, err := os.ReadFile(p)
					existed := err == nil
					if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n# changed\n"), 0o755); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() {
						if existed {
							_ = os.WriteFile(p, old, 0o755)
						} else {
							_ = os.Remove(p)
						}
					})
					d, err := intercept(t, h, toolBefore(t, "Bash", `{"command":"ls"}`), 10*time.Second)
					if err != nil || d == nil || d.Kind != interceptors.Deny || !strings.Contains(d.Reason, p) {
						t.Fatalf("after %s changed: %+v, %v; want deny naming it", f, d, err)
					}
					if _, err := h.Run(context.Background(), &claudecode.Input{}); !errors.Is(err, command.ErrChanged) {
						t.Fatalf("Run after %s changed: %v; want ErrChanged", f, err)
					}
				})
			}
			for _, f := range tc.free {
				t.Run(f+" free", func(t *testing.T) {
					h := newHook(t, command.Config{Root: root}, claudecode.PreToolUse, tc.handler)
					p := filepath.Join(root, f)
					old, err := os.ReadFile(p)
					existed := err == nil
					if err := os.WriteFile(p, []byte("changed\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() {
						if existed {
							_ = os.WriteFile(p, old, 0o755)
						} else {
							_ = os.Remove(p)
						}
					})
					if _, err := h.Run(context.Background(), &claudecode.Input{}); errors.Is(err, command.ErrChanged) {
						t.Fatalf("Run after %s changed: %v; want it to run", f, err)
					}
				})
			}
		})
	}
}

// writeFile writes an executable file, making its directory.
func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// On an event that cannot block (PostToolUse), a hook whose script changed
// fails with ErrChanged, which the chain records as hook.failed; the script
// does not run.
func TestChangedHookScriptOnPostToolUse(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	marker := filepath.Join(outside, "ran")
	writeFile(t, filepath.Join(root, "post.sh"), "#!/bin/sh\nexit 0\n")
	h := newHook(t, command.Config{Root: root}, claudecode.PostToolUse, `{"type":"command","command":"./post.sh"}`)
	writeFile(t, filepath.Join(root, "post.sh"), "#!/bin/sh\ntouch "+marker+"\n")
	ev := newEvent(t, events.StageToolAfter, "Bash", events.ToolAfter{
		Call:   events.ToolCall{ID: "toolu_1", Name: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`)},
		Result: events.ToolResult{CallID: "toolu_1", Name: "Bash", Content: "ok"}})
	d, err := intercept(t, h, ev, 10*time.Second)
	if !errors.Is(err, command.ErrChanged) || d != nil {
		t.Fatalf("PostToolUse after the script changed: %+v, %v; want ErrChanged", d, err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the changed script ran: %v", err)
	}
}
