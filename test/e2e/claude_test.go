package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/internal/fakellm"
)

// claudeBin is Claude Code on PATH, or the test is skipped.
func claudeBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("claude")
	if err != nil {
		t.Skip("claude (Claude Code) is not on PATH: \"make e2e\" installs @anthropic-ai/claude-code and runs these tests with it")
	}
	return p
}

// result is the part of Claude Code's --output-format json result the
// tests read.
type result struct {
	Result            string `json:"result"`
	IsError           bool   `json:"is_error"`
	SessionID         string `json:"session_id"`
	PermissionDenials []struct {
		ToolName  string          `json:"tool_name"`
		ToolUseID string          `json:"tool_use_id"`
		ToolInput json.RawMessage `json:"tool_input"`
	} `json:"permission_denials"`
}

// runClaude runs "claude -p prompt --output-format json" in a project
// directory whose .claude/settings.json sends every hook event to
// loop claude-hook on natsURL, against a fake Anthropic API answering
// from steps. It returns the project directory, the result and the
// requests the fake received.
func runClaude(t *testing.T, natsURL, prompt string, steps ...fakellm.Step) (string, *result, []fakellm.Request) {
	t.Helper()
	claude := claudeBin(t)
	bin := binaries(t)
	fake := fakellm.Start(t, &fakellm.Script{Steps: steps})
	project, home := t.TempDir(), t.TempDir()
	hook := []map[string]any{{"matcher": "*", "hooks": []map[string]any{{"type": "command",
		"command": filepath.Join(bin, "loop") + " claude-hook --nats " + natsURL + " --timeout 20s", "timeout": 30}}}}
	settings := map[string]any{"hooks": map[string]any{}}
	for _, ev := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"} {
		settings["hooks"].(map[string]any)[ev] = hook
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(project, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".claude", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", prompt, "--output-format", "json", "--allowedTools", "Bash")
	cmd.Dir = project
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_API_KEY=sk-ant-fake",
		"ANTHROPIC_BASE_URL=" + fake.URL(), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	var r result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("claude's result: %v\n%s\nstderr %s", err, stdout.String(), stderr.String())
	}
	return project, &r, fake.Requests()
}

// toolResult returns the tool_result content Claude Code sent the model
// for call id, from the fake's requests.
func toolResult(t *testing.T, reqs []fakellm.Request, id string) string {
	t.Helper()
	for _, r := range reqs {
		var body struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &body)
		for _, m := range body.Messages {
			var blocks []struct {
				Type      string          `json:"type"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(m.Content, &blocks)
			for _, b := range blocks {
				if b.Type == "tool_result" && b.ToolUseID == id {
					return string(b.Content)
				}
			}
		}
	}
	t.Fatalf("no tool_result for %s in %d requests", id, len(reqs))
	return ""
}

// A remote interceptor on tool.before denies Claude Code's Bash command:
// Claude Code does not run it, tells the model the reason, and its result
// reports the denial; the session's events are in the stream.
func TestClaudeCodeDenied(t *testing.T) {
	claudeBin(t)
	url, b := startBus(t)
	_, r, reqs := runClaude(t, url, "Remove the victim directory.",
		fakellm.AnthropicStream(claudeModel, fakellm.Text("Removing it."),
			fakellm.ToolUse("toolu_01Deny", "Bash", map[string]any{"command": "rm -rf victim", "description": "Remove victim"})),
		fakellm.AnthropicStream(claudeModel, fakellm.Text("The hook refused: I left victim alone.")))
	if len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolName != "Bash" || r.PermissionDenials[0].ToolUseID != "toolu_01Deny" {
		t.Fatalf("permission_denials: %+v", r)
	}
	if got := toolResult(t, reqs, "toolu_01Deny"); !strings.Contains(got, "no rm -rf in this repository") {
		t.Fatalf("the model was told: %s", got)
	}
	if !strings.Contains(stages(t, b, r.SessionID), "hook.decided tool.before") {
		t.Fatalf("session %s: %s", r.SessionID, stages(t, b, r.SessionID))
	}
	t.Logf("session %s: %s", r.SessionID, stages(t, b, r.SessionID))
}

// Another rewrites the command: Claude Code runs the rewritten one.
func TestClaudeCodeRewritten(t *testing.T) {
	claudeBin(t)
	url, b := startBus(t)
	project, r, reqs := runClaude(t, url, "Create original.txt.",
		fakellm.AnthropicStream(claudeModel, fakellm.ToolUse("toolu_01Touch", "Bash", map[string]any{"command": "touch original.txt", "description": "Create the file"})),
		fakellm.AnthropicStream(claudeModel, fakellm.Text("Done.")))
	if r.IsError || r.Result != "Done." || len(r.PermissionDenials) != 0 {
		t.Fatalf("result: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(project, "rewritten.txt")); err != nil {
		t.Fatalf("the rewritten command did not run: %v (tool result %s)", err, toolResult(t, reqs, "toolu_01Touch"))
	}
	if _, err := os.Stat(filepath.Join(project, "original.txt")); err == nil {
		t.Fatal("the original command ran")
	}
	got := stages(t, b, r.SessionID)
	for _, want := range []string{"run.started", "intake", "hook.decided tool.before", "tool.after", "stop run.completed"} {
		if !strings.Contains(got, want) {
			t.Fatalf("session %s lacks %s: %s", r.SessionID, want, got)
		}
	}
	t.Logf("session %s: %s", r.SessionID, got)
}
