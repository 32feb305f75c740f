package integration

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// deployConf loads deploy/nats/single.conf (accounts and permissions
// included) onto a loopback port and a temporary store, and starts it.
func deployConf(t *testing.T) (url func(user, pass string) string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	opts, err := server.ProcessConfigFile(filepath.Join(filepath.Dir(file), "..", "..", "deploy", "nats", "single.conf"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.HTTPHost, opts.HTTPPort = "", 0
	opts.StoreDir = t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	addr := srv.Addr().String()
	return func(user, pass string) string { return fmt.Sprintf("nats://%s:%s@%s", user, pass, addr) }
}

// With deploy/nats' permissions, the operator provisions (observer
// provision as admin); the loop user, which may not create streams, then
// runs agents, and the auditor replays them but cannot provision.
func TestLeastPrivilegeUsers(t *testing.T) {
	url := deployConf(t)
	admin, loopUser, auditor := url("admin", "admin-change-me"), url("loop", "loop-change-me"), url("auditor", "auditor-change-me")

	// Before provisioning, the loop user cannot create what is missing: a
	// clear error, not a hang.
	r := run(t, "loop", "run", "--nats", loopUser, "--session", "s1", "hi")
	if r.code == 0 || !strings.Contains(r.stderr, "missing HOOKBUS_EVENTS") || !strings.Contains(r.stderr, "observer provision") {
		t.Fatalf("loop run before provisioning: %d %s", r.code, r.stderr)
	}
	p := run(t, "observer", "provision", "--nats", admin)
	if p.code != 0 || !strings.Contains(p.stdout, "provisioned HOOKBUS_EVENTS") {
		t.Fatalf("observer provision as admin: %d %s %s", p.code, p.stdout, p.stderr)
	}
	r = run(t, "loop", "run", "--nats", loopUser, "--session", "s1", "what is 6*7?")
	if r.code != 0 || !strings.Contains(r.stdout, "6*7 = 42") {
		t.Fatalf("loop run as the loop user: %d %s %s", r.code, r.stdout, r.stderr)
	}
	rep := run(t, "observer", "replay", "--nats", auditor, "--session", "s1", "--json")
	if evs := jsonEvents(t, rep.stdout); rep.code != 0 || len(evs) != 16 {
		t.Fatalf("replay as the auditor: %d, %d events, %s", rep.code, len(evs), rep.stderr)
	}
	if p := run(t, "observer", "provision", "--nats", auditor, "--wait", "1s"); p.code == 0 {
		t.Fatalf("the auditor provisioned: %s", p.stdout)
	}

	// The auditor reads the registry; what it may not do is refused as
	// "permission denied", naming what, at once rather than at a timeout.
	if add := run(t, "observer", "hooks", "add", "--nats", admin, "--stage", "tool.after", "--plugin", "plugin-pii"); add.code != 0 {
		t.Fatalf("hooks add as admin: %d %s", add.code, add.stderr)
	}
	if l := run(t, "observer", "hooks", "list", "--nats", auditor); l.code != 0 || !strings.Contains(l.stdout, "plugin-pii") {
		t.Fatalf("hooks list as the auditor: %d %s %s", l.code, l.stdout, l.stderr)
	}
	for _, args := range [][]string{
		{"hooks", "grant", "plugin-pii"},
		{"hooks", "add", "--stage", "tool.before", "--plugin", "plugin-pii"},
		{"hooks", "rm", "--stage", "tool.after", "--plugin", "plugin-pii"},
	} {
		r := run(t, "observer", append(args, "--nats", auditor)...)
		if r.code != 1 || !strings.Contains(r.stderr, "permission denied: Permissions Violation for Publish to") {
			t.Errorf("observer %v as the auditor: %d %s", args, r.code, r.stderr)
		}
	}
	// The loop writes the registry but not the grants.
	if r := run(t, "observer", "hooks", "grant", "plugin-pii", "--nats", loopUser); r.code != 1 || !strings.Contains(r.stderr, `permission denied: Permissions Violation for Publish to "$KV.hookbus_trust.plugin-pii"`) {
		t.Errorf("hooks grant as the loop: %d %s", r.code, r.stderr)
	}
	if r := run(t, "loop", "submit", "--nats", auditor, "hi"); r.code != 1 || !strings.Contains(r.stderr, `permission denied: Permissions Violation for Publish to "hookbus.run.demo"`) {
		t.Errorf("loop submit as the auditor: %d %s", r.code, r.stderr)
	}
}
