package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// doctorSetup writes one CLI's hooks to hookbus into home and project:
// hook is the hook command (or, for a plugin, unused).
type doctorSetup struct {
	name string
	// hooks writes the settings sending every event to hook.
	hooks func(t *testing.T, home, project, hook string)
	// trust marks the project trusted; nil for a CLI without trust.
	trust  func(t *testing.T, home, project string)
	plugin bool
	// trustFlag: an untrusted project is a note (the CLI may be run with
	// its flag that trusts it), not a problem.
	trustFlag bool
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// settingsJSON is a settings file whose hooks send every event of row to
// command.
func settingsJSON(t *testing.T, row cliRow, command string) string {
	t.Helper()
	hooks := map[string]any{}
	for _, ev := range row.events {
		hooks[ev] = []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": command, "timeout": 30}}}}
	}
	b, err := json.Marshal(map[string]any{"hooks": hooks})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rowOf(t *testing.T, name string) cliRow {
	t.Helper()
	for _, r := range cliRows() {
		if r.name == name {
			return r
		}
	}
	t.Fatalf("no row %s", name)
	return cliRow{}
}

var doctorSetups = []doctorSetup{
	{name: "claude",
		hooks: func(t *testing.T, _, project, hook string) {
			writeTestFile(t, filepath.Join(project, ".claude", "settings.json"), settingsJSON(t, rowOf(t, "claude"), hook))
		},
		trust: func(t *testing.T, home, project string) {
			writeTestFile(t, filepath.Join(home, ".claude.json"), fmt.Sprintf(`{"projects":{%q:{"hasTrustDialogAccepted":true}}}`, project))
		}},
	{name: "gemini",
		hooks: func(t *testing.T, home, _, hook string) {
			writeTestFile(t, filepath.Join(home, ".gemini", "settings.json"), settingsJSON(t, rowOf(t, "gemini"), hook))
		},
		trust: func(t *testing.T, home, project string) {
			writeTestFile(t, filepath.Join(home, ".gemini", "trustedFolders.json"), fmt.Sprintf(`{%q:"TRUST_FOLDER"}`, project))
		}},
	{name: "codex",
		hooks: func(t *testing.T, _, project, hook string) {
			writeTestFile(t, filepath.Join(project, ".codex", "hooks.json"), settingsJSON(t, rowOf(t, "codex"), hook))
		},
		trust: func(t *testing.T, home, project string) {
			writeTestFile(t, filepath.Join(home, ".codex", "config.toml"), fmt.Sprintf("model = \"x\"\n\n[projects.%q]\ntrust_level = \"trusted\"\n", project))
		}},
	{name: "opencode", plugin: true, hooks: func(t *testing.T, _, project, _ string) {
		copyPlugin(t, filepath.Join(project, ".opencode", "plugins"))
	}},
	{name: "kilo", plugin: true, hooks: func(t *testing.T, _, project, _ string) { copyPlugin(t, filepath.Join(project, ".kilo", "plugins")) }},
	{name: "copilot", trustFlag: true,
		hooks: func(t *testing.T, _, project, hook string) {
			hooks := map[string]any{}
			for _, ev := range rowOf(t, "copilot").events {
				hooks[ev] = []any{map[string]any{"type": "command", "bash": hook, "timeoutSec": 30}}
			}
			b, _ := json.Marshal(map[string]any{"version": 1, "hooks": hooks})
			writeTestFile(t, filepath.Join(project, ".github", "hooks", "hookbus.json"), string(b))
		},
		trust: func(t *testing.T, home, project string) {
			writeTestFile(t, filepath.Join(home, ".copilot", "config.json"), fmt.Sprintf(`{"trusted_folders":[%q]}`, project))
		}},
	{name: "qwen",
		hooks: func(t *testing.T, home, _, hook string) {
			// Folder trust on, as a user may set it.
			var settings map[string]any
			if err := json.Unmarshal([]byte(settingsJSON(t, rowOf(t, "qwen"), hook)), &settings); err != nil {
				t.Fatal(err)
			}
			settings["security"] = map[string]any{"folderTrust": map[string]any{"enabled": true}}
			b, _ := json.Marshal(settings)
			writeTestFile(t, filepath.Join(home, ".qwen", "settings.json"), string(b))
		},
		trust: func(t *testing.T, home, project string) {
			writeTestFile(t, filepath.Join(home, ".qwen", "trustedFolders.json"), fmt.Sprintf(`{%q:"TRUST_FOLDER"}`, project))
		}},
	{name: "factory",
		hooks: func(t *testing.T, home, _, hook string) {
			writeTestFile(t, filepath.Join(home, ".factory", "settings.json"), settingsJSON(t, rowOf(t, "factory"), hook))
		}},
	{name: "cline",
		hooks: func(t *testing.T, home, _, hook string) {
			for _, ev := range rowOf(t, "cline").events {
				p := filepath.Join(home, ".cline", "hooks", ev)
				writeTestFile(t, p, "#!/bin/sh\nexec "+hook+"\n")
				if err := os.Chmod(p, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}},
}

func copyPlugin(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "sdk", "opencode-plugin", "hookbus.js"))
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "hookbus.js"), string(b))
}

// runDoctor runs loop doctor with HOME home in project.
func runDoctor(t *testing.T, home, project string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	t.Setenv("GEMINI_CLI_TRUST_WORKSPACE", "")
	for _, v := range []string{"COPILOT_HOME", "COPILOT_ALLOW_ALL", "QWEN_CODE_SYSTEM_SETTINGS_PATH", "QWEN_CODE_TRUSTED_FOLDERS_PATH"} {
		t.Setenv(v, "")
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"doctor", "--project", project, "--wait", "3s"}, args...), strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// loop doctor, for each CLI (Claude Code, Gemini CLI, Codex CLI, OpenCode,
// Kilo Code, Copilot CLI, Qwen Code, Factory Droid, Cline), on a correct setup (no problem, and the
// probe recorded on the bus) and on broken ones, each problem named:
// hooks missing, the project untrusted, a bad token, the bus (or the
// gateway) down.
func TestDoctor(t *testing.T) {
	natsURL, _ := startBusWithGuard(t)
	t.Setenv("HOOKBUS_GATEWAY_TOKEN", gatewayToken)
	gw := strings.TrimSuffix(startGateway(t, "--listen", "127.0.0.1:0", "--nats", natsURL), GatewayPath)
	down := closedURL(t)
	for _, s := range doctorSetups {
		t.Run(s.name, func(t *testing.T) {
			row := rowOf(t, s.name)
			hook := loopCommand(t) + " agent-hook --harness " + s.name + " --nats " + natsURL + " --agent doctor-" + s.name
			setup := func(t *testing.T, hook string, trusted bool) (string, string) {
				home, project := t.TempDir(), t.TempDir()
				s.hooks(t, home, project, hook)
				if trusted && s.trust != nil {
					s.trust(t, home, project)
				}
				return home, project
			}
			t.Setenv("HOOKBUS_GATEWAY_URL", gw+row.route)
			t.Setenv("HOOKBUS_GATEWAY_TOKEN", gatewayToken)

			home, project := setup(t, hook, true)
			code, stdout, stderr := runDoctor(t, home, project, "--harness", s.name, "--probe", "--nats", natsURL)
			if code != 0 || !strings.Contains(stdout, "no problems") || !strings.Contains(stdout, "recorded: run.started") {
				t.Fatalf("correct setup: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
			}
			t.Logf("correct setup:\n%s", stdout)
			if !s.plugin && !strings.Contains(stdout, "bus: nats://") {
				t.Errorf("correct setup: no bus line:\n%s", stdout)
			}

			broken := []struct {
				what, hook string
				trusted    bool
				env        map[string]string
				problem    string
			}{
				{what: "hooks missing", problem: "hooks missing", trusted: true},
				{what: "bus down", hook: loopCommand(t) + " agent-hook --harness " + s.name + " --nats " + down, trusted: true, problem: "bus down"},
				{what: "bad token", hook: hookClient(t) + " " + gw + row.route, trusted: true, env: map[string]string{"HOOKBUS_GATEWAY_TOKEN": "not-the-token-0123456789"}, problem: "bad token"},
			}
			if !s.plugin {
				broken = append(broken, struct {
					what, hook string
					trusted    bool
					env        map[string]string
					problem    string
				}{what: "command missing", hook: "/nonexistent/bin/loop agent-hook --harness " + s.name, trusted: true, problem: "hook command missing"})
			}
			if s.trust != nil && s.trustFlag {
				home, project := setup(t, hook, false)
				code, stdout, stderr := runDoctor(t, home, project, "--harness", s.name)
				if code != 0 || !strings.Contains(stdout, "note     trust: ") || !strings.Contains(stdout, "unless run with --trust-folder") {
					t.Fatalf("untrusted project: exit %d, want 0 and a note\nstdout %s\nstderr %s", code, stdout, stderr)
				}
			}
			if s.trust != nil && !s.trustFlag {
				broken = append(broken, struct {
					what, hook string
					trusted    bool
					env        map[string]string
					problem    string
				}{what: "project untrusted", hook: hook, problem: "project untrusted"})
			}
			if s.plugin {
				broken[1].env = map[string]string{"HOOKBUS_GATEWAY_URL": "http://" + strings.TrimPrefix(down, "nats://") + row.route}
				broken[1].problem = "gateway down"
			}
			for _, b := range broken {
				t.Run(strings.ReplaceAll(b.what, " ", "_"), func(t *testing.T) {
					home, project := t.TempDir(), t.TempDir()
					if b.what != "hooks missing" {
						s.hooks(t, home, project, b.hook)
					}
					if b.trusted && s.trust != nil {
						s.trust(t, home, project)
					}
					for k, v := range b.env {
						t.Setenv(k, v)
					}
					code, stdout, stderr := runDoctor(t, home, project, "--harness", s.name)
					if code != 1 || !strings.Contains(stdout, "PROBLEM  "+b.problem) {
						t.Fatalf("%s: exit %d, want 1 and %q\nstdout %s\nstderr %s", b.what, code, b.problem, stdout, stderr)
					}
					t.Logf("%s:\n%s", b.what, stdout)
				})
			}
		})
	}
	t.Run("claude_http", func(t *testing.T) {
		// Claude Code's http hooks to the gateway, failing closed, the
		// token from the environment; then with a token the gateway refuses.
		hooks := map[string]any{}
		for _, ev := range rowOf(t, "claude").events {
			hooks[ev] = []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "http", "url": gw + GatewayPath,
				"headers": map[string]string{"Authorization": "Bearer $HOOKBUS_GATEWAY_TOKEN"}, "allowedEnvVars": []string{"HOOKBUS_GATEWAY_TOKEN"}, "onFailure": "block"}}}}
		}
		b, _ := json.Marshal(map[string]any{"hooks": hooks})
		home, project := t.TempDir(), t.TempDir()
		writeTestFile(t, filepath.Join(home, ".claude", "settings.json"), string(b))
		t.Setenv("HOOKBUS_GATEWAY_TOKEN", gatewayToken)
		code, stdout, stderr := runDoctor(t, home, project, "--harness", "claude", "--probe", "--nats", natsURL)
		if code != 0 || !strings.Contains(stdout, "ok       fail-closed: http hook") || !strings.Contains(stdout, "ok       gateway: ") ||
			!strings.Contains(stdout, "note     trust: the project is not trusted") || !strings.Contains(stdout, "recorded: run.started") {
			t.Fatalf("http hooks: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
		}
		t.Setenv("HOOKBUS_GATEWAY_TOKEN", "not-the-token-0123456789")
		if code, stdout, _ := runDoctor(t, home, project, "--harness", "claude"); code != 1 || !strings.Contains(stdout, "PROBLEM  bad token") {
			t.Fatalf("http hooks, bad token: exit %d\nstdout %s", code, stdout)
		}
	})
	if code, _, stderr := runDoctor(t, t.TempDir(), t.TempDir(), "--harness", "vim"); code != 2 || !strings.Contains(stderr, `--harness "vim"`) {
		t.Errorf("unknown harness: exit %d, stderr %s", code, stderr)
	}
}

// closedURL is a nats:// URL nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "nats://" + ln.Addr().String()
}
