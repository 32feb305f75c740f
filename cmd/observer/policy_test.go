package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/cmd/internal/cli"
)

// policyRun runs "observer policy ARGS" in-process.
func policyRun(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	a := &cli.App{Name: "observer", Version: "test", In: strings.NewReader(stdin), Out: &out, Err: &errOut}
	code = a.Execute(ctx, newRoot(a), append([]string{"policy"}, args...))
	return code, out.String(), errOut.String()
}

// observer policy apply, lint, list, export and delete against a server:
// a file that does not compile stores nothing and names where; apply
// prints name, version and mode; export gives back the file as applied.
func TestPolicyCLI(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	bustest.Provision(t, nc)
	url := srv.ClientURL()
	good := filepath.Join("..", "..", "test", "integration", "testdata", "no-rm-rf.yaml")
	src, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	badSrc := strings.Replace(string(src), "action.command", "action.commandd", 1) + "---\n" + strings.Replace(string(src), "no-rm-rf", "other", 1)
	if err := os.WriteFile(bad, []byte(badSrc), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, sub := range []string{"lint", "apply"} {
		code, out, errOut := policyRun(t, "", sub, "-f", bad, "--nats", url)
		if sub == "lint" {
			code, out, errOut = policyRun(t, "", sub, "-f", bad)
		}
		if code != cli.ExitFailure || out != "" || !strings.Contains(errOut, "bad.yaml:6:") || !strings.Contains(errOut, "commandd") {
			t.Fatalf("%s of a bad file: exit %d\nstdout %s\nstderr %s", sub, code, out, errOut)
		}
	}
	if code, out, errOut := policyRun(t, "", "list", "--nats", url); code != 0 || !strings.Contains(out, "no policies stored") {
		t.Fatalf("list after a refused apply: exit %d %s %s", code, out, errOut)
	}
	code, out, errOut := policyRun(t, "", "lint", "-f", good)
	if code != 0 || !strings.Contains(out, "no-rm-rf") || !strings.Contains(out, "sha256:") || !strings.Contains(out, "ok") {
		t.Fatalf("lint: exit %d %s %s", code, out, errOut)
	}
	code, out, errOut = policyRun(t, string(src), "apply", "-f", "-", "--nats", url, "--note", "ops")
	f := strings.Fields(out)
	if code != 0 || len(f) != 4 || f[0] != "no-rm-rf" || !strings.HasPrefix(f[1], "sha256:") || f[2] != "enforce" || f[3] != "applied" {
		t.Fatalf("apply: exit %d %q %s", code, out, errOut)
	}
	version := f[1]
	if code, out, _ := policyRun(t, "", "apply", "-f", good, "--nats", url); code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "unchanged") {
		t.Fatalf("second apply: exit %d %q", code, out)
	}

	code, out, errOut = policyRun(t, "", "list", "--nats", url)
	if code != 0 || !strings.HasPrefix(out, "NAME") || !strings.Contains(out, version) || !strings.Contains(out, "tool.before") || !strings.Contains(out, "shell") || !strings.Contains(out, "100%") {
		t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = policyRun(t, "", "list", "-o", "json", "--nats", url)
	var rows []policyRow
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 {
		t.Fatalf("list -o json: exit %d %v\n%s", code, err, out)
	}
	if r := rows[0]; r.Name != "no-rm-rf" || r.Version != version || r.Mode != "enforce" || r.Rollout != 100 ||
		strings.Join(r.Stages, ",") != "tool.before" || strings.Join(r.Kinds, ",") != "shell" ||
		r.AppliedBy.DeclaredBy != "ops" || r.AppliedBy.Channel != "cli" || r.AppliedBy.Identity == "" || r.AppliedAt.IsZero() {
		t.Fatalf("list -o json: %+v", r)
	}

	if code, out, errOut := policyRun(t, "", "export", "--nats", url); code != 0 || out != string(src) {
		t.Fatalf("export: exit %d\n%q\nwant\n%q\n%s", code, out, src, errOut)
	}
	if code, _, errOut := policyRun(t, "", "export", "nope", "--nats", url); code != cli.ExitFailure || !strings.Contains(errOut, "no policy nope") {
		t.Fatalf("export of a missing policy: exit %d %s", code, errOut)
	}
	if code, out, errOut := policyRun(t, "", "delete", "no-rm-rf", "--nats", url); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("delete: exit %d %s %s", code, out, errOut)
	}
	if code, _, errOut := policyRun(t, "", "delete", "no-rm-rf", "--nats", url); code != cli.ExitFailure || !strings.Contains(errOut, "no policy no-rm-rf") {
		t.Fatalf("second delete: exit %d %s", code, errOut)
	}
	if code, out, _ := policyRun(t, "", "list", "--nats", url); code != 0 || !strings.Contains(out, "no policies stored") {
		t.Fatalf("list after delete: exit %d %s", code, out)
	}
}
