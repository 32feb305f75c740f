package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The recipes of docs/CODING_AGENTS.md, run as written: each CLI's
// settings snippet is read from the page (the fenced block after its
// "<!-- e2e:NAME -->" marker), its loop and connection put in, and the
// CLI is run against a loop fake-model process, as a user runs it.

// codingAgentsDoc is the page the recipes are read from.
const codingAgentsDoc = "../../docs/CODING_AGENTS.md"

// The placeholders of the page's snippets: the loop binary, the hook's
// connection file, the fake model's address.
const (
	docLoop     = "/path/to/hookbus/bin/loop"
	docHookConf = "/etc/hookbus/hook.json"
	docFakeURL  = "http://127.0.0.1:8790"
)

// snippet returns the fenced block after the marker "<!-- e2e:name -->" in
// the page, or fails the test.
func snippet(t *testing.T, page, name string) string {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- e2e:" + name + " -->\n"
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("%s has no %q", page, strings.TrimSpace(marker))
	}
	if !strings.HasPrefix(rest, "```") {
		t.Fatalf("%s: %q is not followed by a fenced block", page, strings.TrimSpace(marker))
	}
	_, body, _ := strings.Cut(rest, "\n")
	block, _, ok := strings.Cut(body, "```")
	if !ok {
		t.Fatalf("%s: the block after %q does not end", page, strings.TrimSpace(marker))
	}
	return block
}

// recipe is one CLI's recipe as the test runs it.
type recipe struct {
	name string // --harness
	bin  string // the CLI's command
	pkg  string // its npm package
	// agent is the agent id its sessions are recorded under (the
	// harness's own: the snippets set none).
	agent string
	// tool is the fake model's call of the CLI's shell tool running
	// command, as a script's tool line.
	tool func(command string) string
	// configure writes the CLI's settings from the page into home and
	// project; fill puts the test's loop, connection and fake in.
	configure func(t *testing.T, home, project string, fill func(string) string)
	// args and env run the CLI on prompt against the fake at fakeURL.
	args func(prompt string) []string
	env  func(home, fakeURL string) []string
	// session reads the CLI's session id from its stdout.
	session func(stdout []byte) string
	// before, when set, runs before the CLI (Cline's auth).
	before func(t *testing.T, bin, home, project, fakeURL string)
}

// fakeModel is a loop fake-model process.
type fakeModel struct {
	url    string
	record string
	log    *bytes.Buffer
}

// startFakeModel starts loop fake-model on script (a YAML text) on a free
// loopback port, recording each request; it is stopped when the test
// ends.
func startFakeModel(t *testing.T, script string) *fakeModel {
	t.Helper()
	dir := t.TempDir()
	file, record := filepath.Join(dir, "fake.yaml"), filepath.Join(dir, "requests.jsonl")
	writeFile(t, file, script)
	cmd := exec.Command(filepath.Join(binaries(t), "loop"), "fake-model", "--script", file, "--listen", "127.0.0.1:0", "--record", record)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	})
	f := &fakeModel{record: record, log: &bytes.Buffer{}}
	urls := make(chan string, 1)
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			f.log.WriteString(line + "\n")
			mu.Unlock()
			if u, ok := strings.CutPrefix(line, "loop fake-model: listening on "); ok {
				urls <- strings.Fields(u)[0]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-urls:
		f.url = strings.TrimSuffix(u, ",")
	case <-time.After(30 * time.Second):
		t.Fatalf("loop fake-model did not say where it listens:\n%s", f.log)
	}
	return f
}

// requests returns the bodies of the requests the fake recorded.
func (f *fakeModel) requests(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(f.record)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range bytes.Lines(b) {
		var r struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%s: %v: %s", f.record, err, line)
		}
		out = append(out, string(r.Body))
	}
	return out
}

var copilotRecipe = &recipe{
	name: "copilot", bin: "copilot", pkg: "@github/copilot", agent: "copilot-cli",
	tool: func(c string) string {
		return fmt.Sprintf("{name: bash, arguments: {command: %s, description: Remove victim}}", c)
	},
	configure: func(t *testing.T, _, project string, fill func(string) string) {
		writeFile(t, filepath.Join(project, ".github", "hooks", "hookbus.json"), fill(snippet(t, codingAgentsDoc, "copilot-hooks")))
	},
	args: func(prompt string) []string {
		return []string{"-p", prompt, "--allow-all-tools", "--trust-folder", "--output-format", "json"}
	},
	env: func(_, fakeURL string) []string {
		return []string{"COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL=" + fakeURL + "/v1", "COPILOT_PROVIDER_API_KEY=fake",
			"COPILOT_MODEL=fake-model", "COPILOT_AUTO_UPDATE=false"}
	},
	session: func(stdout []byte) string { return jsonLineField(stdout, "result", "sessionId") },
}

var qwenRecipe = &recipe{
	name: "qwen", bin: "qwen", pkg: "@qwen-code/qwen-code", agent: "qwen-code",
	tool: func(c string) string {
		return fmt.Sprintf("{name: run_shell_command, arguments: {command: %s, description: Remove victim}}", c)
	},
	configure: func(t *testing.T, home, _ string, fill func(string) string) {
		writeFile(t, filepath.Join(home, ".qwen", "settings.json"), fill(snippet(t, codingAgentsDoc, "qwen-hooks")))
	},
	args: func(prompt string) []string {
		return []string{"--auth-type", "openai", "-p", prompt, "--yolo", "-o", "json"}
	},
	env: func(_, fakeURL string) []string {
		return []string{"OPENAI_BASE_URL=" + fakeURL + "/v1", "OPENAI_API_KEY=fake", "OPENAI_MODEL=fake-model", "QWEN_CODE_SUPPRESS_YOLO_WARNING=1"}
	},
	session: func(stdout []byte) string {
		var out []struct {
			Type      string `json:"type"`
			SessionID string `json:"session_id"`
		}
		_ = json.Unmarshal(stdout, &out)
		for _, o := range out {
			if o.Type == "result" {
				return o.SessionID
			}
		}
		return ""
	},
}

var factoryRecipe = &recipe{
	name: "factory", bin: "droid", pkg: "@factory/cli", agent: "factory-droid",
	tool: func(c string) string {
		return fmt.Sprintf("{name: Execute, arguments: {command: %s, riskLevel: high, riskLevelReason: It deletes a directory.}}", c)
	},
	configure: func(t *testing.T, home, _ string, fill func(string) string) {
		settings := map[string]any{}
		for _, name := range []string{"factory-hooks", "factory-model"} {
			var part map[string]any
			if err := json.Unmarshal([]byte(fill(snippet(t, codingAgentsDoc, name))), &part); err != nil {
				t.Fatalf("%s's %s snippet: %v", codingAgentsDoc, name, err)
			}
			for k, v := range part {
				settings[k] = v
			}
		}
		writeJSON(t, filepath.Join(home, ".factory", "settings.json"), settings)
	},
	args: func(prompt string) []string {
		return []string{"exec", "-m", "custom:fake-0", "--auto", "high", "-o", "json", prompt}
	},
	env: func(string, string) []string { return nil },
	session: func(stdout []byte) string {
		var r struct {
			SessionID string `json:"session_id"`
		}
		_ = json.Unmarshal(stdout, &r)
		return r.SessionID
	},
}

// clineEvents are the files Cline's hook is installed as.
var clineEvents = []string{"TaskStart", "TaskResume", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "TaskCancel", "TaskComplete"}

var clineRecipe = &recipe{
	name: "cline", bin: "cline", pkg: "cline", agent: "cline",
	tool: func(c string) string { return fmt.Sprintf("{name: run_commands, arguments: {commands: [%s]}}", c) },
	configure: func(t *testing.T, home, _ string, fill func(string) string) {
		script := fill(snippet(t, codingAgentsDoc, "cline-hook"))
		for _, ev := range clineEvents {
			p := filepath.Join(home, ".cline", "hooks", ev)
			writeFile(t, p, script)
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	},
	before: func(t *testing.T, bin, home, project, fakeURL string) {
		cmd := exec.Command(bin, "auth", "-p", "openai-compatible", "-k", "fake", "-m", "fake-model", "-b", fakeURL+"/v1")
		cmd.Dir, cmd.Env = project, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cline auth: %v\n%s", err, out)
		}
	},
	args: func(prompt string) []string { return []string{"--json", prompt} },
	env:  func(string, string) []string { return nil },
	session: func(stdout []byte) string {
		return jsonLineField(stdout, "hook_event", "taskId")
	},
}

// jsonLineField is field of the first JSON line of typ in out.
func jsonLineField(out []byte, typ, field string) string {
	for line := range bytes.Lines(out) {
		var m map[string]any
		if json.Unmarshal(line, &m) != nil || m["type"] != typ {
			continue
		}
		if s, ok := m[field].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// killClineHub ends the hub daemon Cline started for project (a process
// group of its own, which outlives the CLI).
func killClineHub(t *testing.T, project string) {
	t.Helper()
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if !slicesContains(args, "--cline-hub-daemon") || !slicesContains(args, project) {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		} else {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Logf("stopped Cline's hub daemon, pid %d", pid)
	}
}

func slicesContains(s []string, v string) bool {
	for _, e := range s {
		if e == v {
			return true
		}
	}
	return false
}

// runRecipe runs the recipe's CLI on the prompt "Remove the victim
// directory." in a new project with a victim directory, its hooks from
// the page sent to loop on natsURL, against a fake model whose first turn
// calls the shell tool with rm -rf victim. It returns the project, the
// session id, and the fake.
func runRecipe(t *testing.T, r *recipe, natsURL string) (project, session string, fake *fakeModel) {
	t.Helper()
	return runRecipeOn(t, r, natsURL, "Remove the victim directory.", "rm -rf victim")
}

// runRecipeOn runs the recipe's CLI on prompt, the fake model's first
// turn calling its shell tool with command.
func runRecipeOn(t *testing.T, r *recipe, natsURL, prompt, command string) (project, session string, fake *fakeModel) {
	t.Helper()
	return runRecipeScript(t, r, natsURL, prompt, "turns:\n  - reply: On it.\n    tool: "+r.tool(command)+"\n  - reply: Done, or the hook refused, so I left it alone.\n")
}

// runRecipeScript runs the recipe's CLI on prompt, in a new project with a
// victim directory, against a loop fake-model serving script (YAML turns).
func runRecipeScript(t *testing.T, r *recipe, natsURL, prompt, script string) (project, session string, fake *fakeModel) {
	t.Helper()
	bin, err := exec.LookPath(r.bin)
	if err != nil {
		t.Skipf("%s (%s) is not on PATH: \"make e2e\" installs it from npm and runs these tests with it", r.bin, r.pkg)
	}
	loop := filepath.Join(binaries(t), "loop")
	fake = startFakeModel(t, script)
	project, home := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(project, "victim", "keep.txt"), "keep me\n")
	conf := filepath.Join(home, "hook.json")
	writeJSON(t, conf, map[string]any{"nats": natsURL, "timeout": "20s"})
	fill := func(s string) string {
		return strings.NewReplacer(docLoop, loop, docHookConf, conf, docFakeURL, fake.url).Replace(s)
	}
	r.configure(t, home, project, fill)
	if r.before != nil {
		r.before(t, bin, home, project, fake.url)
	}
	if r.name == "cline" {
		t.Cleanup(func() { killClineHub(t, project) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, r.args(prompt)...)
	cmd.Dir = project
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, r.env(home, fake.url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout %s\nstderr %s\nfake model:\n%s", r.bin, err, stdout.String(), stderr.String(), fake.log)
	}
	t.Logf("%s ran in %s", r.bin, time.Since(start).Round(time.Millisecond))
	session = r.session(stdout.Bytes())
	if session == "" {
		t.Fatalf("%s's output names no session:\n%s\nstderr %s", r.bin, stdout.String(), stderr.String())
	}
	return project, session, fake
}

// claudeCodeDoc is the page of Claude Code's, Gemini CLI's and Codex CLI's
// recipes.
const claudeCodeDoc = "../../docs/CLAUDE_CODE.md"

// Gemini CLI with the page's hooks (the least a session needs), the API
// key's auth and the fake as its Gemini API.
var geminiRecipe = &recipe{
	name: "gemini", bin: "gemini", pkg: "@google/gemini-cli", agent: "gemini-cli",
	tool: func(c string) string {
		return fmt.Sprintf("{name: run_shell_command, arguments: {command: %s, description: Remove victim}}", c)
	},
	configure: func(t *testing.T, home, _ string, fill func(string) string) {
		var settings map[string]any
		if err := json.Unmarshal([]byte(fill(snippet(t, claudeCodeDoc, "gemini-hooks"))), &settings); err != nil {
			t.Fatalf("%s's gemini-hooks snippet: %v", claudeCodeDoc, err)
		}
		settings["security"] = map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}}
		settings["general"] = map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
		settings["privacy"] = map[string]any{"usageStatisticsEnabled": false}
		writeJSON(t, filepath.Join(home, ".gemini", "settings.json"), settings)
	},
	args: func(prompt string) []string { return []string{"-p", prompt, "--yolo", "-m", geminiModel, "-o", "json"} },
	env: func(_, fakeURL string) []string {
		return []string{"GEMINI_API_KEY=fake-gemini-key", "GOOGLE_GEMINI_BASE_URL=" + fakeURL, "GEMINI_CLI_TRUST_WORKSPACE=true"}
	},
	session: func(stdout []byte) string {
		var r struct {
			SessionID string `json:"session_id"`
		}
		_ = json.Unmarshal(stdout, &r)
		return r.SessionID
	},
}

// Codex CLI with the page's hooks and the fake as its provider.
var codexRecipe = &recipe{
	name: "codex", bin: "codex", pkg: "@openai/codex", agent: "codex-cli",
	tool: func(c string) string { return fmt.Sprintf("{name: exec_command, arguments: {cmd: %s}}", c) },
	configure: func(t *testing.T, home, _ string, fill func(string) string) {
		dir := filepath.Join(home, ".codex")
		writeFile(t, filepath.Join(dir, "hooks.json"), fill(snippet(t, claudeCodeDoc, "codex-hooks")))
		writeFile(t, filepath.Join(dir, "config.toml"), fill(`model = "`+codexModel+`"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "`+docFakeURL+`/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
`))
	},
	args: func(prompt string) []string {
		return []string{"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--dangerously-bypass-hook-trust", "--json", prompt}
	},
	env:     func(home, _ string) []string { return []string{"CODEX_HOME=" + filepath.Join(home, ".codex")} },
	session: func(stdout []byte) string { return jsonLineField(stdout, "thread.started", "thread_id") },
}

// Claude Code with the page's hooks, the fake as its Anthropic API.
var claudeRecipe = &recipe{
	name: "claude", bin: "claude", pkg: "@anthropic-ai/claude-code", agent: "claude-code",
	tool: func(c string) string {
		return fmt.Sprintf("{name: Bash, arguments: {command: %s, description: Remove victim}}", c)
	},
	configure: func(t *testing.T, _, project string, fill func(string) string) {
		writeFile(t, filepath.Join(project, ".claude", "settings.json"), fill(snippet(t, claudeCodeDoc, "claude-hooks")))
	},
	args: func(prompt string) []string {
		return []string{"-p", prompt, "--output-format", "json", "--allowedTools", "Bash"}
	},
	env: func(_, fakeURL string) []string {
		return []string{"ANTHROPIC_API_KEY=sk-ant-fake", "ANTHROPIC_BASE_URL=" + fakeURL,
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
	},
	session: func(stdout []byte) string {
		var r result
		_ = json.Unmarshal(stdout, &r)
		return r.SessionID
	},
}

// Claude Code's, Gemini CLI's and Codex CLI's snippets of docs/CLAUDE_CODE.md, copied as
// written, record a whole session: its prompt, the guard's deny, and its
// end (a session that never ends stays running in the record).
func TestClaudeRecipeEnds(t *testing.T) { testRecipeEnds(t, claudeRecipe) }
func TestGeminiRecipeEnds(t *testing.T) { testRecipeEnds(t, geminiRecipe) }
func TestCodexRecipeEnds(t *testing.T)  { testRecipeEnds(t, codexRecipe) }

func testRecipeEnds(t *testing.T, r *recipe) {
	url, _ := startBus(t)
	project, session, fake := runRecipe(t, r, url)
	if _, err := os.Stat(filepath.Join(project, "victim", "keep.txt")); err != nil {
		t.Fatalf("the rm -rf ran: %v", err)
	}
	told := false
	for _, body := range fake.requests(t) {
		told = told || strings.Contains(body, denyReason)
	}
	if !told {
		t.Fatalf("no request to the model carries the guard's reason %q", denyReason)
	}
	replay := (&harness{agent: r.agent}).replay(t, url, session)
	for _, want := range []string{"run.started", "intake", "Remove the victim directory.", "hook.decided", "run.completed"} {
		if !strings.Contains(replay, want) {
			t.Fatalf("observer replay of session %s lacks %q:\n%s", session, want, replay)
		}
	}
	t.Logf("session %s:\n%s", session, replay)
}

// startGateway starts loop gateway on a free loopback port for the bus at
// natsURL; it returns the gateway's base URL (with a trailing slash).
func startGateway(t *testing.T, natsURL string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binaries(t), "loop"), "gateway", "--listen", "127.0.0.1:0", "--nats", natsURL, "--timeout", "20s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	var log bytes.Buffer
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if _, rest, ok := strings.Cut(sc.Text(), "loop gateway: hooks on "); ok {
				if base, _, ok := strings.Cut(rest, "claude-code"); ok {
					found <- base
				}
			}
		}
	}()
	select {
	case base := <-found:
		return base
	case <-time.After(60 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("loop gateway did not say where it listens:\n%s", log.String())
		return ""
	}
}

// Qwen Code's http hooks, as the page gives them, to loop gateway: no
// process per event, the same deny, the reason reaching the model, the
// session recorded.
func TestQwenRecipeGatewayDenies(t *testing.T) {
	url, _ := startBus(t)
	if _, err := exec.LookPath(qwenRecipe.bin); err != nil {
		t.Skipf("%s (%s) is not on PATH: \"make e2e\" installs it from npm and runs these tests with it", qwenRecipe.bin, qwenRecipe.pkg)
	}
	base := startGateway(t, url)
	r := *qwenRecipe
	r.configure = func(t *testing.T, home, _ string, fill func(string) string) {
		s := strings.ReplaceAll(fill(snippet(t, codingAgentsDoc, "qwen-http-hooks")), "http://127.0.0.1:8480/", base)
		writeFile(t, filepath.Join(home, ".qwen", "settings.json"), s)
	}
	project, session, fake := runRecipe(t, &r, url)
	if _, err := os.Stat(filepath.Join(project, "victim", "keep.txt")); err != nil {
		t.Fatalf("the rm -rf ran: %v", err)
	}
	told := false
	for _, body := range fake.requests(t) {
		told = told || strings.Contains(body, denyReason)
	}
	if !told {
		t.Fatalf("no request to the model carries the guard's reason %q", denyReason)
	}
	replay := (&harness{agent: r.agent}).replay(t, url, session)
	for _, want := range []string{"run.started", "intake", "hook.decided", denyReason, "run.completed"} {
		if !strings.Contains(replay, want) {
			t.Fatalf("observer replay of session %s lacks %q:\n%s", session, want, replay)
		}
	}
}

// testRecipeRewrites checks that the guard's rewrite of a command is the
// one the CLI runs.
func testRecipeRewrites(t *testing.T, r *recipe) {
	url, _ := startBus(t)
	project, session, _ := runRecipeOn(t, r, url, "Create original.txt.", "touch original.txt")
	if _, err := os.Stat(filepath.Join(project, "rewritten.txt")); err != nil {
		t.Fatalf("the rewritten command did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(project, "original.txt")); err == nil {
		t.Fatal("the model's command ran")
	}
	replay := (&harness{agent: r.agent}).replay(t, url, session)
	for _, want := range []string{"tool.before", "hook.decided", "rewritten.txt", "tool.after"} {
		if !strings.Contains(replay, want) {
			t.Fatalf("observer replay of session %s lacks %q:\n%s", session, want, replay)
		}
	}
}

func TestCopilotRecipeRewrites(t *testing.T) { testRecipeRewrites(t, copilotRecipe) }

// Qwen Code runs the model's call whatever a rewrite says: the rewritten
// call is denied instead, neither command runs, and the model is told the
// rewritten one.
func TestQwenRecipeRewriteDenied(t *testing.T) {
	url, _ := startBus(t)
	project, _, fake := runRecipeOn(t, qwenRecipe, url, "Create original.txt.", "touch original.txt")
	for _, f := range []string{"original.txt", "rewritten.txt"} {
		if _, err := os.Stat(filepath.Join(project, f)); err == nil {
			t.Errorf("%s was created", f)
		}
	}
	told := false
	for _, body := range fake.requests(t) {
		told = told || strings.Contains(body, "which Qwen Code does not run in the place of yours")
	}
	if !told {
		t.Fatal("the model was not told of the rewrite")
	}
}
func TestFactoryRecipeRewrites(t *testing.T) { testRecipeRewrites(t, factoryRecipe) }

// Each recipe's deny (the directory surviving, the reason reaching the
// model, the session recorded under the CLI's id) is checked by
// TestPolicyEveryAgent, which runs every CLI once under one policy.
