package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/internal/fakellm"
)

// pluginCLI is OpenCode or Kilo Code: no command hooks, hookbus' plugin
// (sdk/opencode-plugin) posting every hook to loop gateway.
type pluginCLI struct {
	// name is the gateway's --harness; route its path, agent the agent id
	// the test records its sessions under.
	name, route, agent string
	bin, pkg           string
	// config is the project's config file, plugins its plugin directory.
	config, plugins string
}

var (
	opencodeCLI = pluginCLI{name: "opencode", route: "/opencode", agent: "e2e-opencode", bin: "opencode", pkg: "opencode-ai",
		config: "opencode.json", plugins: ".opencode/plugins"}
	kiloCLI = pluginCLI{name: "kilo", route: "/kilo-code", agent: "e2e-kilo", bin: "kilo", pkg: "@kilocode/cli",
		config: "kilo.json", plugins: ".kilo/plugins"}
)

// pluginRun is what a run of OpenCode or Kilo Code left.
type pluginRun struct {
	project, session, stdout string
	fake                     *turnsServer
}

// runPlugin runs OpenCode or Kilo Code with hookbus' plugin posting to a
// loop gateway on natsURL, in a new project with a victim directory: the
// model creates original.txt (the rewriting guard makes it rewritten.txt),
// then removes victim; it answers once the model is told deny. Each CLI
// takes 20-45 s to start: the suite runs each once (TestPolicyEveryAgent).
func runPlugin(t *testing.T, c pluginCLI, natsURL, deny string) *pluginRun {
	t.Helper()
	bin, err := exec.LookPath(c.bin)
	if err != nil {
		t.Skipf("%s (%s) is not on PATH: \"make e2e\" installs it from npm and runs these tests with it", c.bin, c.pkg)
	}
	gw := startHarnessGateway(t, natsURL, c.name)
	fake := startTurns(t, &fakellm.Turns{Turns: []fakellm.Turn{
		{When: deny, Reply: "The hook refused: I left victim alone."},
		{When: "call_01Touch", Reply: "Now removing it.",
			Tool: &fakellm.ToolCall{ID: "call_01Deny", Name: "bash", Arguments: map[string]any{"command": "rm -rf victim", "description": "Remove victim"}}},
		{When: "remove the victim directory", Reply: "Creating it first.",
			Tool: &fakellm.ToolCall{ID: "call_01Touch", Name: "bash", Arguments: map[string]any{"command": "touch original.txt", "description": "Create original.txt"}}},
		{Reply: "Done."}, {Reply: "Done."}, {Reply: "Done."},
	}})
	project, home := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(project, "victim", "keep.txt"), "keep me\n")
	plugin, err := os.ReadFile(filepath.Join("..", "..", "sdk", "opencode-plugin", "hookbus.js"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(project, c.plugins, "hookbus.js"), string(plugin))
	writeJSON(t, filepath.Join(project, c.config), map[string]any{
		"provider": map[string]any{"fake": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Fake",
			"options": map[string]any{"baseURL": fake.URL + "/v1", "apiKey": "fake-key"},
			"models":  map[string]any{"fake-model": map[string]any{"name": "Fake model"}},
		}},
		"model": "fake/fake-model", "small_model": "fake/fake-model",
		"autoupdate": false, "share": "disabled",
		"permission": map[string]any{"bash": "allow", "edit": "allow"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--format", "json", "--title", "e2e", "--model", "fake/fake-model", "Create original.txt, then remove the victim directory.")
	cmd.Dir = project
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"HOOKBUS_GATEWAY_URL=" + gw + c.route + "/" + c.agent, "HOOKBUS_POLICY=fail",
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"KILO_DISABLE_AUTOUPDATE=1", "KILO_DISABLE_MODELS_FETCH=1", "KILO_TELEMETRY_DISABLED=1"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout %s\nstderr %s", c.bin, err, stdout.String(), stderr.String())
	}
	t.Logf("%s ran in %s", c.bin, time.Since(start).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(project, "rewritten.txt")); err != nil {
		t.Fatalf("the rewritten command did not run: %v\nstdout %s", err, stdout.String())
	}
	if _, err := os.Stat(filepath.Join(project, "original.txt")); err == nil {
		t.Fatal("the model's command ran, not the rewritten one")
	}
	return &pluginRun{project: project, session: sessionID(t, stdout.Bytes()), stdout: stdout.String(), fake: fake}
}

// startKindBus starts a NATS server other processes reach, with
// rewriter (the guard without its deny) registered on tool.before for
// calls of the shell kind, whatever the tool's name; it returns the
// server's URL and the bus.
func startKindBus(t *testing.T) (string, *bus.Bus) {
	t.Helper()
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := remote.NewRegistry(b).Put(ctx, interceptors.Registration{Plugin: "rewriter", Stage: events.StageToolBefore, Kinds: "shell"}); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Serve(ctx, nc, remote.ServeConfig{Plugin: "rewriter", Stages: []events.Stage{events.StageToolBefore}}, interceptors.Func(rewriter)); err != nil {
		t.Fatal(err)
	}
	return srv.ClientURL(), b
}

// rewriter is guard without its deny: it rewrites "touch original.txt" to
// "touch rewritten.txt" and lets every other call through.
func rewriter(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	d, err := guard(ctx, req)
	if d != nil && d.Kind == interceptors.Deny {
		return nil, err
	}
	return d, err
}

// startHarnessGateway runs loop gateway for harness on natsURL until the test
// ends and returns its base URL, once it answers.
func startHarnessGateway(t *testing.T, natsURL, harness string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(filepath.Join(binaries(t), "loop"), "gateway", "--nats", natsURL, "--harness", harness, "--listen", addr, "--metrics", "")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("loop gateway:\n%s", out.String())
		}
	})
	base := "http://" + addr
	bustest.Eventuallyf(t, 30*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "loop gateway listening on %s", addr)
	return base
}

// turnsServer is a fake model API answering from turns, keeping every
// request's body.
type turnsServer struct {
	URL  string
	mu   sync.Mutex
	reqs []string
}

func startTurns(t *testing.T, turns *fakellm.Turns) *turnsServer {
	t.Helper()
	s := &turnsServer{}
	ts := fakellm.NewTurnServer(turns, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Method+" "+r.URL.Path+" "+string(body))
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		ts.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// saw reports whether a request's body held text.
func (s *turnsServer) saw(text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.reqs {
		if strings.Contains(r, text) {
			return true
		}
	}
	return false
}

func (s *turnsServer) bodies() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, r := range s.reqs {
		b.WriteString(r[:min(len(r), 2000)] + "\n")
	}
	return b.String()
}

// sessionID is the session of a run's --format json output.
func sessionID(t *testing.T, stdout []byte) string {
	t.Helper()
	for line := range bytes.Lines(stdout) {
		var ev struct {
			SessionID string `json:"sessionID"`
		}
		if json.Unmarshal(line, &ev) == nil && ev.SessionID != "" {
			return ev.SessionID
		}
	}
	t.Fatalf("no sessionID in the --format json output:\n%s", stdout)
	return ""
}
