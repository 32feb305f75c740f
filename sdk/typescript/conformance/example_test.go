package conformance_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/codex"
	"github.com/hookbus/hookbus/hooks/gemini"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
)

// The README's ten-line policy (examples/deny-rm-rf.ts), run as a user
// runs it, registers itself, and a loop that syncs the registry has its
// rm -rf denied: the tool never runs, and the model is told why; another
// command runs.
func TestDenyRmRfExample(t *testing.T) {
	node, _ := needSDK(t)
	example := filepath.Join(sdkDir(), "build", "examples", "deny-rm-rf.js")
	if _, err := os.Stat(example); err != nil {
		t.Skipf("skipped: %s is missing: run make sdk-ts", example)
	}
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	out := &bustest.Buffer{}
	cmd := exec.Command(node, example)
	cmd.Dir = sdkDir()
	cmd.Env = append(os.Environ(), "NATS_URL="+srv.ClientURL())
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("the policy's output:\n%s", out)
		}
	})

	trust, err := remote.WatchTrust(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer trust.Stop()
	chain := interceptors.NewChain(interceptors.WithTrust(trust))
	hs, err := remote.SyncHooks(ctx, b, chain, trust)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Stop()
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return chain.MatchesCall(events.StageToolBefore, "Bash", events.KindShell, "ops") > 0 }, "the policy's registration synced")
	// Registered, and serving: the registration is written before the service starts.
	bustest.Eventuallyf(t, 30*time.Second, func() bool {
		_, err := nc.Request("$SRV.PING.no-rm-rf", nil, time.Second)
		return err == nil
	}, "the policy's service answers")

	var mu sync.Mutex
	var ran []string
	bash := loop.ToolFunc(events.ToolSpec{Name: "Bash"}, func(_ context.Context, args json.RawMessage) (string, error) {
		var a struct{ Command string }
		_ = json.Unmarshal(args, &a)
		mu.Lock()
		ran = append(ran, a.Command)
		mu.Unlock()
		return "done", nil
	})
	model := scripted.New(&scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{
			{Name: "Bash", Arguments: json.RawMessage(`{"command":"rm -rf /"}`)},
			{Name: "Bash", Arguments: json.RawMessage(`{"command":"ls -la"}`)},
		}},
		{Content: "{{tool:Bash}}"},
	}})
	eng, err := loop.New(loop.Config{Emitter: b, History: b, Model: model, Hooks: chain, Tools: []loop.Tool{bash}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(ctx, &events.RunRequest{AgentID: "ops", SessionID: "s1", Prompt: "clean up"})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 1 || ran[0] != "ls -la" {
		t.Fatalf("commands run: %q, want only ls -la", ran)
	}
	evs, err := b.SessionEvents(ctx, "ops", "s1")
	if err != nil {
		t.Fatal(err)
	}
	denied := false
	for _, e := range evs {
		if e.Stage != events.StageHookDecided {
			continue
		}
		var d events.HookDecided
		if err := e.DecodeData(&d); err != nil {
			t.Fatal(err)
		}
		if d.Plugin == "no-rm-rf" && d.Decision == "deny" && d.Reason == "rm -rf is not allowed here" && d.Remote {
			denied = true
		}
	}
	if !denied || res.Reason != events.ReasonDone {
		t.Fatalf("run ended %s; a remote deny by no-rm-rf recorded: %v", res.Reason, denied)
	}

	// The same policy, matching the shell kind, denies rm -rf in Claude
	// Code, Gemini CLI and Codex CLI through the bridge.
	for _, tc := range []struct {
		h   harness.Protocol
		raw string
	}{
		{claudecode.Harness{}, `{"session_id":"c1","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"rm -rf /"}}`},
		{gemini.Harness{}, `{"session_id":"g1","cwd":"/tmp","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"rm -rf /"}}`},
		{codex.Harness{}, `{"session_id":"x1","turn_id":"1","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"shell","tool_use_id":"t1","tool_input":{"command":["bash","-lc","rm -rf /"]}}`},
	} {
		br, err := bridge.New(bridge.Config{Store: b, Hooks: chain, Harness: tc.h})
		if err != nil {
			t.Fatal(err)
		}
		reply, err := br.Serve(ctx, []byte(tc.raw))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(reply.Stdout)+reply.Stderr, "rm -rf is not allowed here") {
			t.Errorf("%s: rm -rf not denied: %s%s", tc.h.Name(), reply.Stdout, reply.Stderr)
		}
	}
}

// The policy docs/HOOKS.md and the SDK's README show is
// examples/deny-rm-rf.ts, which TestDenyRmRfExample runs.
func TestReadmePolicyIsTheExample(t *testing.T) {
	example, err := os.ReadFile(filepath.Join(sdkDir(), "examples", "deny-rm-rf.ts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, readme := range []string{filepath.Join(sdkDir(), "..", "..", "README.md"), filepath.Join(sdkDir(), "..", "..", "docs", "HOOKS.md"), filepath.Join(sdkDir(), "README.md")} {
		b, err := os.ReadFile(readme)
		if err != nil {
			t.Fatal(err)
		}
		_, block, ok := strings.Cut(string(b), "```ts\n")
		block, _, _ = strings.Cut(block, "```\n")
		if !ok || strings.TrimSpace(block) != strings.TrimSpace(string(example)) {
			t.Errorf("%s's first ts block is not examples/deny-rm-rf.ts:\n%s", readme, block)
		}
	}
}
