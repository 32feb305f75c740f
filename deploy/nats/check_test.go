package natsconf_test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// checkConfig runs the check `nats-server -t -c name` runs: the same
// function (server.ConfigureOptions) with the same arguments. Like the
// command, it fails on warnings as well as errors. Nothing is started and
// nothing is written, so the files are checked as they are, store_dir and
// ports included.
func checkConfig(t *testing.T, name string) *server.Options {
	t.Helper()
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	noop := func() {}
	opts, err := server.ConfigureOptions(fs, []string{"-t", "-c", name}, noop, noop, noop)
	if err != nil {
		t.Fatalf("nats-server -t -c %s: %v", name, err)
	}
	if !opts.CheckConfig {
		t.Fatalf("nats-server -t -c %s: -t not taken", name)
	}
	return opts
}

func TestEveryConfPassesCheck(t *testing.T) {
	files, err := filepath.Glob("*.conf")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"accounts.conf", "cluster-n1.conf", "cluster-n2.conf", "cluster-n3.conf", "cluster.conf", "single.conf"}
	if !slices.Equal(files, want) {
		t.Fatalf("conf files = %v, want %v (add a new file to this test and the README)", files, want)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) { checkConfig(t, f) })
	}
}

// TestAccountsAreIncluded: every runnable config loads the same accounts,
// users and system account (that HOOKBUS has JetStream is proven by the
// permission tests, which provision streams in it).
func TestAccountsAreIncluded(t *testing.T) {
	wantUsers := []string{"admin", "alice", "approver", "auditor", "checkpointer", "loop", "plugin-pii", "plugin-policy", "sys", "webui", "witness"}
	for _, f := range []string{"single.conf", "cluster-n1.conf", "cluster-n2.conf", "cluster-n3.conf"} {
		t.Run(f, func(t *testing.T) {
			opts := checkConfig(t, f)
			if opts.SystemAccount != "SYS" {
				t.Errorf("system_account = %q, want SYS", opts.SystemAccount)
			}
			var users []string
			for _, u := range opts.Users {
				users = append(users, u.Username)
				wantAcc := "HOOKBUS"
				if u.Username == "sys" {
					wantAcc = "SYS"
				}
				if u.Account == nil || u.Account.Name != wantAcc {
					t.Errorf("user %s is not in account %s", u.Username, wantAcc)
				}
			}
			slices.Sort(users)
			if !slices.Equal(users, wantUsers) {
				t.Errorf("users = %v, want %v", users, wantUsers)
			}
		})
	}
}

func TestSingleSettings(t *testing.T) {
	opts := checkConfig(t, "single.conf")
	if !opts.JetStream {
		t.Error("JetStream is off")
	}
	if opts.MaxPayload != 1<<20 {
		t.Errorf("max_payload = %d, want 1MB", opts.MaxPayload)
	}
	// The durability choice is stated, not defaulted: 2m, no fsync per write.
	if opts.SyncAlways || opts.SyncInterval != 2*time.Minute {
		t.Errorf("sync_interval: always=%v interval=%v, want 2m", opts.SyncAlways, opts.SyncInterval)
	}
	if opts.JetStreamMaxStore <= 0 || opts.JetStreamMaxMemory <= 0 {
		t.Errorf("JetStream limits not set: file %d, memory %d", opts.JetStreamMaxStore, opts.JetStreamMaxMemory)
	}
	if opts.Cluster.Port != 0 || len(opts.Routes) != 0 {
		t.Errorf("single.conf has cluster settings: port %d, routes %v", opts.Cluster.Port, opts.Routes)
	}
}

func TestClusterSettings(t *testing.T) {
	for i, f := range []string{"cluster-n1.conf", "cluster-n2.conf", "cluster-n3.conf"} {
		t.Run(f, func(t *testing.T) {
			opts := checkConfig(t, f)
			if want := "n" + string(rune('1'+i)); opts.ServerName != want {
				t.Errorf("server_name = %q, want %q", opts.ServerName, want)
			}
			if !opts.JetStream || !opts.SyncAlways {
				t.Errorf("JetStream %v, sync_interval always %v: want both", opts.JetStream, opts.SyncAlways)
			}
			if opts.MaxPayload != 1<<20 {
				t.Errorf("max_payload = %d, want 1MB", opts.MaxPayload)
			}
			if opts.Cluster.Name != "hookbus" || opts.Cluster.Port != 6222 {
				t.Errorf("cluster %q port %d, want hookbus 6222", opts.Cluster.Name, opts.Cluster.Port)
			}
			if !opts.Cluster.NoAdvertise {
				t.Error("cluster advertises node addresses to clients")
			}
			if opts.Cluster.Username == "" || opts.Cluster.Password == "" {
				t.Error("routes are not authenticated")
			}
			var hosts []string
			for _, r := range opts.Routes {
				hosts = append(hosts, r.Host)
				if p, _ := r.User.Password(); r.User.Username() != opts.Cluster.Username || p != opts.Cluster.Password {
					t.Errorf("route %s does not carry the cluster credentials", r.Redacted())
				}
			}
			if want := []string{"n1:6222", "n2:6222", "n3:6222"}; !slices.Equal(hosts, want) {
				t.Errorf("routes = %v, want %v", hosts, want)
			}
		})
	}
}

// TestComposeMatchesConfigs reads docker-compose.yml as text and checks it
// against the configurations: the node services are the route hosts, each
// runs the config file of its name on the nats image of go.mod's
// nats-server, every mounted file exists, and every nats:// URL uses a
// user and password accounts.conf defines, on a node that exists, at the
// client port. TestComposeServices reads it as YAML.
func TestComposeMatchesConfigs(t *testing.T) {
	raw, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	compose := string(raw)
	opts := checkConfig(t, "cluster-n1.conf")

	for _, n := range []string{"n1", "n2", "n3"} {
		svc := regexp.MustCompile(`(?m)^  ` + n + `:\n((?:    .*\n|\n)*)`).FindStringSubmatch(compose)
		if svc == nil {
			t.Errorf("no service %s", n)
			continue
		}
		if !strings.Contains(svc[1], "/etc/nats/cluster-"+n+".conf") {
			t.Errorf("service %s does not run cluster-%s.conf", n, n)
		}
		if image := "image: nats:" + natsServerVersion(t); !strings.Contains(svc[1], image) {
			t.Errorf("service %s is not on %s (go.mod's nats-server)", n, image)
		}
	}
	for _, m := range regexp.MustCompile(`/etc/nats/([\w.-]+\.conf)`).FindAllStringSubmatch(compose, -1) {
		if _, err := os.Stat(m[1]); err != nil {
			t.Errorf("compose runs %s: %v", m[1], err)
		}
	}
	if !strings.Contains(compose, "./:/etc/nats:ro") {
		t.Error("compose does not mount deploy/nats (the includes need the whole directory) at /etc/nats")
	}

	if m := regexp.MustCompile(`nats://[^\s@,]*@`).FindString(compose); m != "" {
		t.Errorf("compose gives a user or password in a URL (%s...): give them in NATS_USER and NATS_PASSWORD", m)
	}
	users := map[string]string{}
	for _, u := range opts.Users {
		users[u.Username] = u.Password
	}
	creds := regexp.MustCompile(`(?m)^\s+NATS_USER: (\S+)\n\s+NATS_PASSWORD: (\S+)$`).FindAllStringSubmatch(compose, -1)
	if len(creds) == 0 {
		t.Fatal("no NATS_USER and NATS_PASSWORD in compose")
	}
	for _, m := range creds {
		if want, ok := users[m[1]]; !ok || want != m[2] {
			t.Errorf("compose connects as %s with a password accounts.conf does not give it", m[1])
		}
	}
	urls := regexp.MustCompile(`nats://([\w-]+):(\d+)`).FindAllStringSubmatch(compose, -1)
	for _, m := range urls {
		host, port := m[1], m[2]
		if host == "localhost" {
			continue // the commented example, from the host
		}
		if !slices.Contains([]string{"n1", "n2", "n3"}, host) || port != "4222" {
			t.Errorf("compose connects to %s:%s, not a node's client port", host, port)
		}
	}
}
