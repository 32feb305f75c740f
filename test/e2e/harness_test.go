package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/internal/fakellm"
)

// harness is a coding agent's CLI as the tests drive it: its hook settings
// written into a temporary HOME and project, its model API a fake the test
// owns, every hook event sent to one command.
type harness struct {
	// name is the --harness of loop agent-hook; agent the agent id the
	// tests record its sessions under.
	name, agent string
	// bin is the CLI's command, pkg its npm package.
	bin, pkg string
	// turn is the fake's answer to one model request: the blocks as the
	// CLI's model API streams them.
	turn func(blocks ...fakellm.Block) fakellm.Step
	// shell is a model's call of the CLI's shell tool running command.
	shell func(id, command string) fakellm.Block
	// configure writes the CLI's settings (hooks running hook, the model
	// API at fakeURL) into home and project.
	configure func(t *testing.T, home, project, hook, fakeURL string)
	// command is the CLI's non-interactive run of prompt; env its
	// environment beyond PATH and HOME.
	command func(prompt string, opts runOpts) []string
	env     func(home, fakeURL string) []string
	// session reads the harness's session id from the CLI's output.
	session func(t *testing.T, stdout []byte) string
	// toolOutput is what the CLI told the model its call id returned, from
	// the requests the fake received.
	toolOutput func(t *testing.T, reqs []fakellm.Request, id string) string
}

// runOpts change how a harness runs.
type runOpts struct {
	// ask runs Claude Code without allowing Bash up front, so that it asks
	// for permission (a PermissionRequest hook).
	ask bool
}

const (
	claudeModel = "claude-sonnet-4-5"
	geminiModel = "gemini-2.5-flash"
	codexModel  = "gpt-5.1-codex"
)

// The hook events each CLI offers (at the versions make e2e installs:
// Claude Code's include DirectoryAdded and PreSkillShellCommand, Codex
// CLI's PreModelRequest); its settings send every one to the hook command.
var (
	claudeEvents = []string{"Setup", "SessionStart", "InstructionsLoaded", "UserPromptSubmit", "UserPromptExpansion",
		"PreToolUse", "PermissionRequest", "PermissionDenied", "PostToolUse", "PostToolUseFailure", "PostToolBatch",
		"Notification", "SubagentStart", "SubagentStop", "TaskCreated", "TaskCompleted", "PreCompact", "PostCompact",
		"Elicitation", "ElicitationResult", "ConfigChange", "CwdChanged", "FileChanged", "DirectoryAdded", "WorktreeCreate",
		"WorktreeRemove", "PreModelSwitch", "PostModelSwitch", "PreSkillShellCommand", "MessageDisplay", "TeammateIdle",
		"Stop", "StopFailure", "SessionEnd"}
	geminiEvents = []string{"SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeModel", "AfterModel",
		"BeforeToolSelection", "BeforeTool", "AfterTool", "PreCompress", "Notification"}
	codexEvents = []string{"SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse",
		"PreCompact", "PostCompact", "Stop", "StopFailure", "SubagentStart", "SubagentStop", "Interrupt", "PreModelRequest"}
)

var claude = &harness{
	name: "claude", agent: "e2e-claude", bin: "claude", pkg: "@anthropic-ai/claude-code",
	turn: func(blocks ...fakellm.Block) fakellm.Step { return fakellm.AnthropicStream(claudeModel, blocks...) },
	shell: func(id, command string) fakellm.Block {
		return fakellm.ToolUse(id, "Bash", map[string]any{"command": command, "description": "Run " + command})
	},
	configure: func(t *testing.T, _, project, hook, _ string) {
		writeJSON(t, filepath.Join(project, ".claude", "settings.json"), map[string]any{"hooks": hookTable(claudeEvents, hook, 30)})
	},
	command: func(prompt string, o runOpts) []string {
		args := []string{"-p", prompt, "--output-format", "json"}
		if !o.ask {
			args = append(args, "--allowedTools", "Bash")
		}
		return args
	},
	env: func(_, fakeURL string) []string {
		return []string{"ANTHROPIC_API_KEY=sk-ant-fake", "ANTHROPIC_BASE_URL=" + fakeURL,
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
	},
	session: func(t *testing.T, stdout []byte) string {
		var r result
		if err := json.Unmarshal(stdout, &r); err != nil || r.SessionID == "" {
			t.Fatalf("claude's result has no session_id (%v):\n%s", err, stdout)
		}
		return r.SessionID
	},
	toolOutput: toolResult,
}

// Gemini CLI: hooks and the API key's auth in ~/.gemini/settings.json
// (timeouts in milliseconds), the workspace trusted by
// GEMINI_CLI_TRUST_WORKSPACE, the Gemini API at GOOGLE_GEMINI_BASE_URL.
var gemini = &harness{
	name: "gemini", agent: "e2e-gemini", bin: "gemini", pkg: "@google/gemini-cli",
	turn: func(blocks ...fakellm.Block) fakellm.Step { return fakellm.GeminiStream(geminiModel, blocks...) },
	shell: func(id, command string) fakellm.Block {
		return fakellm.ToolUse(id, "run_shell_command", map[string]any{"command": command, "description": "Run " + command})
	},
	configure: func(t *testing.T, home, _, hook, _ string) {
		writeJSON(t, filepath.Join(home, ".gemini", "settings.json"), map[string]any{
			"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
			"general":  map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
			"privacy":  map[string]any{"usageStatisticsEnabled": false},
			"hooks":    hookTable(geminiEvents, hook, 30000),
		})
	},
	command: func(prompt string, _ runOpts) []string {
		return []string{"-p", prompt, "--yolo", "-m", geminiModel, "-o", "json"}
	},
	env: func(_, fakeURL string) []string {
		return []string{"GEMINI_API_KEY=fake-gemini-key", "GOOGLE_GEMINI_BASE_URL=" + fakeURL, "GEMINI_CLI_TRUST_WORKSPACE=true"}
	},
	session: func(t *testing.T, stdout []byte) string {
		var r struct {
			SessionID string `json:"session_id"`
		}
		if err := json.Unmarshal(stdout, &r); err != nil || r.SessionID == "" {
			t.Fatalf("gemini's output has no session_id (%v):\n%s", err, stdout)
		}
		return r.SessionID
	},
	toolOutput: geminiFunctionResponse,
}

// Codex CLI: the fake as a model provider with wire_api "responses" in
// $CODEX_HOME/config.toml, hooks in $CODEX_HOME/hooks.json (Claude Code's
// format, timeouts in seconds), trusted by --dangerously-bypass-hook-trust.
var codex = &harness{
	name: "codex", agent: "e2e-codex", bin: "codex", pkg: "@openai/codex",
	turn: func(blocks ...fakellm.Block) fakellm.Step { return fakellm.ResponsesStream(codexModel, blocks...) },
	shell: func(id, command string) fakellm.Block {
		return fakellm.ToolUse(id, "exec_command", map[string]any{"cmd": command})
	},
	configure: func(t *testing.T, home, _, hook, fakeURL string) {
		dir := filepath.Join(home, ".codex")
		writeFile(t, filepath.Join(dir, "config.toml"), `model = "`+codexModel+`"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "`+fakeURL+`/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
`)
		writeJSON(t, filepath.Join(dir, "hooks.json"), map[string]any{"hooks": hookTable(codexEvents, hook, 30)})
	},
	command: func(prompt string, _ runOpts) []string {
		return []string{"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
			"--dangerously-bypass-hook-trust", "--json", prompt}
	},
	env: func(home, _ string) []string {
		return []string{"CODEX_HOME=" + filepath.Join(home, ".codex")}
	},
	session: func(t *testing.T, stdout []byte) string {
		for line := range bytes.Lines(stdout) {
			var ev struct {
				Type     string `json:"type"`
				ThreadID string `json:"thread_id"`
			}
			if json.Unmarshal(line, &ev) == nil && ev.Type == "thread.started" && ev.ThreadID != "" {
				return ev.ThreadID
			}
		}
		t.Fatalf("codex's --json output has no thread.started:\n%s", stdout)
		return ""
	},
	toolOutput: codexFunctionCallOutput,
}

var harnesses = []*harness{claude, gemini, codex}

// hookTable is the hooks object of a settings file: every event runs
// command, with a timeout in the harness's unit.
func hookTable(events []string, command string, timeout int) map[string]any {
	hooks := map[string]any{}
	for _, ev := range events {
		hooks[ev] = []map[string]any{{"matcher": "*", "hooks": []map[string]any{{"type": "command", "command": command, "timeout": timeout}}}}
	}
	return hooks
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lookPath returns the harness's CLI on PATH, or skips the test.
func (h *harness) lookPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath(h.bin)
	if err != nil {
		t.Skipf("%s (%s) is not on PATH: \"make e2e\" installs it from npm and runs these tests with it", h.bin, h.pkg)
	}
	return p
}

// hookCommand is loop agent-hook for the harness on natsURL, as its
// settings name it; the test is skipped when loop has no agent-hook.
func (h *harness) hookCommand(t *testing.T, natsURL string) string {
	t.Helper()
	bin := binaries(t)
	if code, _, stderr := run(t, bin, "loop", "", "agent-hook", "--help"); code != 0 && strings.Contains(stderr, "unknown command") {
		t.Skipf("this loop has no agent-hook command: %s", strings.TrimSpace(stderr))
	}
	return filepath.Join(bin, "loop") + " agent-hook --harness " + h.name + " --nats " + natsURL + " --agent " + h.agent + " --timeout 20s"
}

// outcome is what a harness's run left.
type outcome struct {
	project string
	session string
	stdout  string
	reqs    []fakellm.Request
}

// run runs the harness's CLI on prompt in a new project (prepared by
// setup, when given), its hooks sent to hook, against a fake model API
// answering from steps, and waits for it to end.
func (h *harness) run(t *testing.T, hook string, setup func(project string), prompt string, o runOpts, steps ...fakellm.Step) *outcome {
	t.Helper()
	cmd, out, fake := h.start(t, hook, setup, prompt, o, steps...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\nstdout %s\nstderr %s", h.bin, err, out.stdout, out.stderr)
	}
	return out.outcome(t, h, fake)
}

// running is a started CLI's output so far.
type running struct {
	project        string
	stdout, stderr *bytes.Buffer
}

func (r *running) outcome(t *testing.T, h *harness, fake *fakellm.Server) *outcome {
	t.Helper()
	return &outcome{project: r.project, session: h.session(t, r.stdout.Bytes()), stdout: r.stdout.String(), reqs: fake.Requests()}
}

// start starts the harness's CLI as run does, without waiting.
func (h *harness) start(t *testing.T, hook string, setup func(project string), prompt string, o runOpts, steps ...fakellm.Step) (*exec.Cmd, *running, *fakellm.Server) {
	t.Helper()
	bin := h.lookPath(t)
	fake := fakellm.Start(t, &fakellm.Script{Name: h.name, Steps: steps})
	project, home := t.TempDir(), t.TempDir()
	if setup != nil {
		setup(project)
	}
	h.configure(t, home, project, hook, fake.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, h.command(prompt, o)...)
	cmd.Dir = project
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, h.env(home, fake.URL())...)
	r := &running{project: project, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", h.bin, err)
	}
	return cmd, r, fake
}

// geminiFunctionResponse is the response Gemini CLI sent the model for
// its last call of run_shell_command (Gemini's calls have no id of the
// model's: id is unused, the last response to the shell tool in the last
// request holding one is the one).
func geminiFunctionResponse(t *testing.T, reqs []fakellm.Request, _ string) string {
	t.Helper()
	for _, r := range slices.Backward(reqs) {
		last := ""
		var body struct {
			Contents []struct {
				Parts []struct {
					FunctionResponse *struct {
						Name     string          `json:"name"`
						Response json.RawMessage `json:"response"`
					} `json:"functionResponse"`
				} `json:"parts"`
			} `json:"contents"`
		}
		_ = json.Unmarshal(r.Body, &body)
		for _, c := range body.Contents {
			for _, p := range c.Parts {
				if p.FunctionResponse != nil && p.FunctionResponse.Name == "run_shell_command" {
					last = string(p.FunctionResponse.Response)
				}
			}
		}
		if last != "" {
			return last
		}
	}
	t.Fatalf("no functionResponse of run_shell_command in %d requests", len(reqs))
	return ""
}

// codexFunctionCallOutput is the function_call_output Codex CLI sent the
// model for call id.
func codexFunctionCallOutput(t *testing.T, reqs []fakellm.Request, id string) string {
	t.Helper()
	for _, r := range reqs {
		var body struct {
			Input []struct {
				Type   string          `json:"type"`
				CallID string          `json:"call_id"`
				Output json.RawMessage `json:"output"`
			} `json:"input"`
		}
		_ = json.Unmarshal(r.Body, &body)
		for _, in := range body.Input {
			if in.Type == "function_call_output" && in.CallID == id {
				return string(in.Output)
			}
		}
	}
	t.Fatalf("no function_call_output for %s in %d requests", id, len(reqs))
	return ""
}
