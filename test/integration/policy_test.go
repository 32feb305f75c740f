package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

// policyFile is the README's policy: rm -rf denied in every shell command,
// whatever the agent calls its shell tool.
const policyFile = "testdata/no-rm-rf.yaml"

// hookDecidedPolicy returns the denials of policies in the hook.decided
// events of agent's session, as observer replay prints them.
func hookDecidedPolicy(t *testing.T, url, agent, session string) []events.PolicyHit {
	t.Helper()
	rep := run(t, "observer", "replay", "--nats", url, "--agent", agent, "--session", session, "--stage", "hook.decided", "--json")
	if rep.code != 0 {
		t.Fatalf("observer replay: exit %d\n%s", rep.code, rep.stderr)
	}
	var hits []events.PolicyHit
	for _, e := range jsonEvents(t, rep.stdout) {
		var d events.HookDecided
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Policy == nil {
			continue
		}
		if d.Plugin != "policy-"+d.Policy.Name || (d.Decision == "deny") != (d.Policy.Action == "deny") {
			t.Fatalf("hook.decided of a policy: %+v, %+v", d, d.Policy)
		}
		if d.Decision == "deny" {
			hits = append(hits, *d.Policy)
		}
	}
	return hits
}

// One CEL policy file, applied with observer policy apply to a running
// worker (picked up live), denies rm -rf in hookbus' own agent (the
// scripted model's Bash call, the reason reaching the model) and in
// Gemini CLI (run_shell_command through loop agent-hook), and every
// decision is recorded in hook.decided naming the policy, its version and
// rule.
func TestPolicyDeniesRmRfInEveryAgent(t *testing.T) {
	addr := freeAddr(t)
	url := "nats://" + addr
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "x", "keep"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := toolScript(t, "Bash", map[string]any{"command": "rm -rf x"})
	_, serveOut := start(t, "loop", "serve", "--store", filepath.Join(t.TempDir(), "store"), "--listen", addr, "--agent", "demo",
		"--script", script, "--tools", "Bash", "--root", root, "--log-level", "info")
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return strings.Contains(serveOut.String(), "taking runs") },
		"loop serve to start; output so far:\n%s", serveOut)

	// A file that does not compile is refused, naming where, and stores
	// nothing.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	src, err := os.ReadFile(policyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(string(src), "action.command", "action.commandd", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "observer", "policy", "apply", "-f", bad, "--nats", url); r.code != 1 || !strings.Contains(r.stderr, "bad.yaml:6:") {
		t.Fatalf("apply of a bad file: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "observer", "policy", "list", "--nats", url); r.code != 0 || !strings.Contains(r.stdout, "no policies stored") {
		t.Fatalf("list after the refusal: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	abs, _ := filepath.Abs(policyFile)
	applied := run(t, "observer", "policy", "apply", "-f", abs, "--nats", url)
	if applied.code != 0 || !strings.Contains(applied.stdout, "no-rm-rf") || !strings.Contains(applied.stdout, "enforce") {
		t.Fatalf("apply: exit %d\nstdout %s\nstderr %s", applied.code, applied.stdout, applied.stderr)
	}
	version := strings.Fields(applied.stdout)[1]
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return strings.Contains(serveOut.String(), "policy loaded") },
		"the worker to load the policy; output so far:\n%s", serveOut)

	// hookbus' own agent: the scripted model calls Bash with rm -rf x.
	sub := run(t, "loop", "submit", "--nats", url, "--agent", "demo", "--session", "s1", "--wait", "clean up")
	if sub.code != 0 || !strings.Contains(sub.stdout, "rm -rf is not allowed here") {
		t.Fatalf("submit: exit %d\nstdout %s\nstderr %s\nworker:\n%s", sub.code, sub.stdout, sub.stderr, serveOut)
	}
	if _, err := os.Stat(filepath.Join(root, "x", "keep")); err != nil {
		t.Fatalf("rm -rf x ran: %v", err)
	}
	hits := hookDecidedPolicy(t, url, "demo", "s1")
	if len(hits) != 1 || hits[0].Name != "no-rm-rf" || hits[0].Version != version || hits[0].Rule != "rm-rf" ||
		hits[0].Mode != "enforce" || hits[0].Message != "rm -rf is not allowed here" || !hits[0].Enforced {
		t.Fatalf("hook.decided's policy: %+v (applied %s)", hits, version)
	}

	// Gemini CLI: run_shell_command, through loop agent-hook (one process
	// per event, the policies read once).
	in := `{"session_id": "g-1", "transcript_path": "/tmp/t.json", "cwd": "/tmp", "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00Z", "tool_name": "run_shell_command", "tool_input": {"command": "rm -rf victim", "description": "clean"}}`
	gem := runWith(t, runOpts{stdin: in}, "loop", "agent-hook", "--harness", "gemini", "--nats", url)
	if gem.code != 0 || !strings.Contains(gem.stdout, `"decision":"deny"`) || !strings.Contains(gem.stdout, "rm -rf is not allowed here") {
		t.Fatalf("agent-hook gemini: exit %d\nstdout %s\nstderr %s", gem.code, gem.stdout, gem.stderr)
	}
	ls := runWith(t, runOpts{stdin: strings.Replace(in, "rm -rf victim", "ls", 1)}, "loop", "agent-hook", "--harness", "gemini", "--nats", url)
	if ls.code != 0 || strings.Contains(ls.stdout, "deny") {
		t.Fatalf("agent-hook gemini ls: exit %d\nstdout %s\nstderr %s", ls.code, ls.stdout, ls.stderr)
	}
	if hits := hookDecidedPolicy(t, url, "gemini-cli", "g-1"); len(hits) != 1 || hits[0].Version != version || hits[0].Rule != "rm-rf" {
		t.Fatalf("gemini's hook.decided: %+v", hits)
	}

	// export gives back the file as applied; delete lifts the policy
	// live.
	exp := run(t, "observer", "policy", "export", "--nats", url)
	if exp.code != 0 || exp.stdout != string(src) {
		t.Fatalf("export: exit %d\n%q\nwant\n%q", exp.code, exp.stdout, src)
	}
	if r := run(t, "observer", "policy", "delete", "no-rm-rf", "--nats", url); r.code != 0 {
		t.Fatalf("delete: exit %d %s", r.code, r.stderr)
	}
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return strings.Contains(serveOut.String(), "policy unloaded") },
		"the worker to unload the policy; output so far:\n%s", serveOut)
	gem = runWith(t, runOpts{stdin: in}, "loop", "agent-hook", "--harness", "gemini", "--nats", url)
	if gem.code != 0 || strings.Contains(gem.stdout, "deny") {
		t.Fatalf("agent-hook gemini after delete: exit %d\nstdout %s\nstderr %s", gem.code, gem.stdout, gem.stderr)
	}
}
