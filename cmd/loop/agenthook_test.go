package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/codex"
	"github.com/hookbus/hookbus/hooks/gemini"
	"github.com/hookbus/hookbus/hooks/harness"
)

// agentHook runs loop agent-hook with stdin and returns its exit code,
// stdout and stderr.
func agentHook(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"agent-hook"}, args...), strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// loop agent-hook answers each harness in its own format, and records
// its sessions under the harness's agent id.
func TestAgentHook(t *testing.T) {
	url, b := startBusWithGuard(t)
	geminiRm := `{"session_id": "g-1", "transcript_path": "/tmp/t.json", "cwd": "/tmp", "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00Z", "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}`
	code, stdout, stderr := agentHook(t, geminiRm, "--harness", "gemini", "--nats", url)
	if code != exitOK || strings.TrimSpace(stdout) != `{"decision":"deny","reason":"no rm -rf here"}` {
		t.Fatalf("gemini: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	// Gemini CLI's events with no stage: recorded, answered {} (it reads
	// stderr when stdout is empty).
	code, stdout, _ = agentHook(t, `{"session_id": "g-1", "hook_event_name": "AfterModel", "llm_response": {"candidates": []}}`, "--harness", "gemini", "--nats", url)
	if code != exitOK || strings.TrimSpace(stdout) != "{}" {
		t.Fatalf("gemini AfterModel: exit %d %q", code, stdout)
	}
	codexRm := `{"session_id": "c-1", "turn_id": "t1", "transcript_path": null, "cwd": "/tmp", "hook_event_name": "PreToolUse", "model": "gpt-5.1-codex", "permission_mode": "default", "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}, "tool_use_id": "call_1"}`
	code, stdout, stderr = agentHook(t, codexRm, "--harness", "codex", "--nats", url)
	if code != exitOK || !strings.Contains(stdout, `"permissionDecision":"deny"`) {
		t.Fatalf("codex: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	// Nothing to say to Codex CLI is nothing at all.
	code, stdout, _ = agentHook(t, strings.Replace(codexRm, "rm -rf /", "ls", 1), "--harness", "codex", "--nats", url)
	if code != exitOK || stdout != "" {
		t.Fatalf("codex ls: exit %d %q", code, stdout)
	}
	// Claude Code's WorktreeCreate reads stdout as the worktree's path:
	// nothing, never {}.
	code, stdout, _ = agentHook(t, hookInput("cc-w", "WorktreeCreate", `, "name": "feature-auth"`), "--harness", "claude", "--nats", url)
	if code != exitOK || stdout != "" {
		t.Fatalf("WorktreeCreate: exit %d %q", code, stdout)
	}
	for agent, session := range map[string]string{gemini.DefaultAgent: "g-1", codex.DefaultAgent: "c-1", "claude-code": "cc-w"} {
		evs, err := b.SessionEvents(context.Background(), agent, session)
		if err != nil || len(evs) == 0 {
			t.Fatalf("%s/%s: %d events, %v", agent, session, len(evs), err)
		}
	}
	code, _, stderr = agentHook(t, "{}", "--harness", "cursor")
	if code != exitUsage || !strings.Contains(stderr, `--harness "cursor"`) {
		t.Fatalf("bad harness: exit %d %s", code, stderr)
	}
	code, _, stderr = agentHook(t, "{}")
	if code != exitUsage || !strings.Contains(stderr, "needs --harness") {
		t.Fatalf("no harness: exit %d %s", code, stderr)
	}
}

// The connection may come from a file (a coding agent may pass its hooks
// no environment); the command line wins over it, and a key it may not
// give is refused, naming it.
func TestAgentHookConfigFile(t *testing.T) {
	url, b := startBusWithGuard(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "hookbus.json")
	cfg, _ := json.Marshal(map[string]any{"nats": url, "agent": "from-file", "timeout": "20s"})
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := agentHook(t, hookInput("f-1", "PreToolUse", rmInput), "--harness", "claude", "--config", file)
	if code != exitOK || !strings.Contains(stdout, `"permissionDecision":"deny"`) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if evs, err := b.SessionEvents(context.Background(), "from-file", "f-1"); err != nil || len(evs) == 0 {
		t.Fatalf("from-file/f-1: %v %v", evs, err)
	}
	code, _, _ = agentHook(t, hookInput("f-2", "PreToolUse", rmInput), "--harness", "claude", "--config", file, "--agent", "flag")
	if evs, err := b.SessionEvents(context.Background(), "flag", "f-2"); code != exitOK || err != nil || len(evs) == 0 {
		t.Fatalf("--agent over the file: exit %d, %v %v", code, evs, err)
	}
	if err := os.WriteFile(file, []byte(`{"nats": "`+url+`", "store": "/tmp/x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = agentHook(t, "{}", "--harness", "claude", "--config", file)
	if code != exitUsage || !strings.Contains(stderr, `"store" is not a flag it may give`) {
		t.Fatalf("bad key: exit %d %s", code, stderr)
	}
}

// loop gateway has a route per harness.
func TestGatewayRoutes(t *testing.T) {
	_, b := startBusWithGuard(t)
	hooks, stop, err := syncHooks(t.Context(), b, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	f := bridgeFlags{policy: "ignore", timeout: 20 * time.Second}
	var hs []harness.Protocol
	for _, name := range harnessNames {
		h, err := harnessOf(name, false)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	gw, err := newGateway(f.config(b, hooks, nil), defaultBodyLimits(), hs...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw.handler())
	defer srv.Close()
	for _, tc := range []struct{ path, body, want string }{
		{"/gemini-cli", `{"session_id": "gw-g", "hook_event_name": "BeforeTool", "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}`, `{"decision":"deny","reason":"no rm -rf here"}`},
		{"/codex-cli/ops", `{"session_id": "gw-c", "turn_id": "t", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}, "tool_use_id": "c1"}`, `"permissionDecision":"deny"`},
		{"/claude-code", hookInput("gw-cc", "ConfigChange", `, "source": "project_settings"`), `{}`},
	} {
		resp, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), tc.want) {
			t.Fatalf("%s: %d %s", tc.path, resp.StatusCode, body)
		}
	}
	for agent, session := range map[string]string{gemini.DefaultAgent: "gw-g", "ops": "gw-c", "claude-code": "gw-cc"} {
		evs, err := b.SessionEvents(context.Background(), agent, session)
		if err != nil || len(evs) == 0 {
			t.Fatalf("%s/%s: %v %v", agent, session, evs, err)
		}
		if agent == "claude-code" && evs[len(evs)-1].Stage != events.StageHarnessEvent {
			t.Fatalf("ConfigChange recorded as %s", evs[len(evs)-1].Stage)
		}
	}
}

// loop gateway --harness takes hooks only on the routes of the harnesses
// it names, lists them as it starts, serves its probes with --metrics, and
// refuses a harness it does not know.
func TestGatewayHarnessFlag(t *testing.T) {
	url, _ := startBusWithGuard(t)
	admin := freeAddr(t)
	said, stop := background(t, "gateway", "--listen", "127.0.0.1:0", "--nats", url, "--harness", "gemini,codex", "--metrics", admin)
	routes := regexp.MustCompile(`hooks on (http://[0-9.:]+/)gemini-cli, http://[0-9.:]+/codex-cli \(`)
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return routes.MatchString(said.String()) }, "loop gateway to list its routes: %s", said)
	base := routes.FindStringSubmatch(said.String())[1]
	gemini := `{"session_id": "gh-g", "hook_event_name": "BeforeTool", "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}`
	if code, body := postHook(t, base+"gemini-cli", "", gemini); code != http.StatusOK || !strings.Contains(body, `"decision":"deny"`) {
		t.Fatalf("/gemini-cli: %d %s", code, body)
	}
	if code, body := postHook(t, base+"claude-code", "", hookInput("gh-c", "PreToolUse", rmInput)); code != http.StatusNotFound {
		t.Fatalf("/claude-code without --harness claude: %d %s", code, body)
	}
	if code, _ := get(t, "http://"+admin+"/readyz", ""); code != http.StatusOK {
		t.Fatalf("/readyz: %d", code)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("stopped with %d: %s", code, said)
	}
	if !strings.Contains(said.String(), "loop gateway: stopped") {
		t.Fatalf("no drain said: %s", said)
	}
	code, _, stderr := loopRun(t, "gateway", "--listen", "127.0.0.1:0", "--nats", url, "--harness", "claude,cursor")
	if code != exitUsage || !strings.Contains(stderr, `--harness "cursor"`) {
		t.Fatalf("bad harness: exit %d %s", code, stderr)
	}
}

// agent-hook's --config is its own JSON file of flag values, booleans
// included, and a flag given wins over it wherever it stands on the line
// (the hookbus config file of the other commands is not read as one).
func TestAgentHookConfigFileFlags(t *testing.T) {
	url, b := startBusWithGuard(t)
	file := filepath.Join(t.TempDir(), "hook.json")
	if err := os.WriteFile(file, []byte(`{"nats": "`+url+`", "agent": "from-file", "policy": "fail", "approve-modified": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := agentHook(t, hookInput("fb-1", "PreToolUse", `, "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "ls"}`), "--config", file, "--harness", "claude", "--agent", "flag")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if evs, err := b.SessionEvents(context.Background(), "flag", "fb-1"); err != nil || len(evs) == 0 {
		t.Fatalf("flag/fb-1: %v %v", evs, err)
	}
	// --policy fail from the file: input that cannot be read blocks.
	code, _, _ = agentHook(t, "not json", "--harness", "claude", "--config", file)
	if code != exitUsage {
		t.Fatalf("policy from the file: exit %d", code)
	}
	if err := os.WriteFile(file, []byte("prefix: acme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = agentHook(t, "{}", "--harness", "claude", "--config", file)
	if code != exitUsage || !strings.Contains(stderr, "not a JSON object of flags") {
		t.Fatalf("a YAML file: exit %d %s", code, stderr)
	}
}

// A hook command reads the hookbus config file as the other commands do
// ($HOOKBUS_CONFIG), and says which bus it uses only with -v.
func TestAgentHookReadsTheConfigFile(t *testing.T) {
	url, b := startBusWithGuard(t)
	in := hookInput("cf-1", "PreToolUse", `, "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "ls"}`)
	code, stdout, stderr := agentHook(t, in, "--harness", "claude", "--nats", url)
	if code != exitOK || strings.Contains(stderr, "bus ") {
		t.Fatalf("without -v: exit %d, stderr %q (want no line saying the bus)\nstdout %s", code, stderr, stdout)
	}
	if evs, err := b.SessionEvents(context.Background(), "claude-code", "cf-1"); err != nil || len(evs) == 0 {
		t.Fatalf("claude-code/cf-1: %v %v", evs, err)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte("context: no-such-context\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOOKBUS_CONFIG", file)
	_, stdout, stderr = agentHook(t, hookInput("cf-2", "PreToolUse", `, "tool_name": "Bash", "tool_use_id": "toolu_2", "tool_input": {"command": "ls"}`), "--harness", "claude")
	if !strings.Contains(stderr, "no-such-context") {
		t.Fatalf("the config file's context was not read: stderr %q\nstdout %s", stderr, stdout)
	}
}
