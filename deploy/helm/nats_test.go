package helmchart_test

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
)

// The approvers and plugins deploy/nats/accounts.conf has, as chart values.
const likeDeployNATS = `
natsAuth:
  approvers: [approver, alice]
  plugins:
    - name: plugin-pii
    - {name: plugin-policy, privileged: true}
  witnesses:
    - {name: w1, user: witness}
`

// natsConfig writes the NATS configuration the release makes (the NATS
// chart's nats.conf, hookbus' accounts.conf where the pods mount it) to a
// directory and checks it as `nats-server -t -c nats.conf` does, in the
// pod's environment (SERVER_NAME). It returns the options and the
// passwords of the users' Secret.
func natsConfig(t *testing.T, r *rendered) (*server.Options, map[string]string) {
	t.Helper()
	cm, _ := r.find("ConfigMap", releaseName+"-nats-config").(*corev1.ConfigMap)
	accounts := r.secret(releaseName + "-hookbus-nats-accounts")
	users := r.secret(releaseName + "-hookbus-nats")
	if cm == nil || accounts == nil || users == nil {
		t.Fatalf("the NATS config, the accounts or the users' Secret is missing: %v", r.names())
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "hookbus"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(cm.Data["nats.conf"]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hookbus", "accounts.conf"), []byte(accounts.StringData["accounts.conf"]), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SERVER_NAME", "demo-nats-0")
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	noop := func() {}
	opts, err := server.ConfigureOptions(fs, []string{"-t", "-c", conf}, noop, noop, noop)
	if err != nil {
		t.Fatalf("nats-server -t -c nats.conf: %v\n%s\n%s", err, cm.Data["nats.conf"], accounts.StringData["accounts.conf"])
	}
	pw := map[string]string{}
	for k, v := range users.StringData {
		pw[strings.TrimSuffix(k, "-password")] = v
	}
	return opts, pw
}

// deployNATS loads deploy/nats/accounts.conf, its prefix replaced as its
// README says.
func deployNATS(t *testing.T, prefix string) *server.Options {
	t.Helper()
	raw, err := os.ReadFile("../nats/accounts.conf")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("hookbus.", prefix+".", "HOOKBUS_", strings.ToUpper(prefix)+"_", "hookbus_", prefix+"_", "HOOKBUS:", strings.ToUpper(prefix)+":").Replace(string(raw))
	path := filepath.Join(t.TempDir(), "accounts.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// sameUsers: the chart's server has exactly deploy/nats' users, each in
// the same account with the same permissions.
func sameUsers(t *testing.T, got, want *server.Options) {
	t.Helper()
	names := func(o *server.Options) []string {
		var out []string
		for _, u := range o.Users {
			out = append(out, u.Username)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(names(got), names(want)) {
		t.Fatalf("users %v, want deploy/nats' %v", names(got), names(want))
	}
	for _, w := range want.Users {
		i := slices.IndexFunc(got.Users, func(u *server.User) bool { return u.Username == w.Username })
		g := got.Users[i]
		if g.Account.Name != w.Account.Name {
			t.Errorf("user %s in account %s, want %s", w.Username, g.Account.Name, w.Account.Name)
		}
		if perms(g.Permissions) != perms(w.Permissions) {
			t.Errorf("user %s: permissions differ from deploy/nats'\n got  %+v\n want %+v", w.Username, perms(g.Permissions), perms(w.Permissions))
		}
	}
	if got.SystemAccount != "SYS" {
		t.Errorf("system account %q", got.SystemAccount)
	}
}

// perms says what p permits, in order; an absent list and an empty one
// (the server makes either, depending on the order it reads a block in)
// read the same.
func perms(p *server.Permissions) string {
	if p == nil {
		return "all"
	}
	s := ""
	if p.Publish != nil {
		s += "pub allow " + strings.Join(p.Publish.Allow, " ") + " deny " + strings.Join(p.Publish.Deny, " ")
	}
	if p.Subscribe != nil {
		s += "; sub allow " + strings.Join(p.Subscribe.Allow, " ") + " deny " + strings.Join(p.Subscribe.Deny, " ")
	}
	if p.Response != nil {
		s += fmt.Sprintf("; responses %d within %s", p.Response.MaxMsgs, p.Response.Expires)
	}
	return s
}

// The NATS configuration the two charts make passes nats-server's own
// check, is the 3-node JetStream cluster deploy/nats describes, and gives
// every user exactly deploy/nats/accounts.conf's permissions.
func TestNATSConfig(t *testing.T) {
	opts, pw := natsConfig(t, mustRender(t, likeDeployNATS))
	sameUsers(t, opts, deployNATS(t, "hookbus"))
	if !opts.JetStream || !opts.SyncAlways || opts.MaxPayload != 1<<20 || opts.StoreDir != "/data" {
		t.Errorf("JetStream %v, sync always %v, max payload %d, store %q", opts.JetStream, opts.SyncAlways, opts.MaxPayload, opts.StoreDir)
	}
	if len(opts.Routes) != 3 || opts.Cluster.Port != 6222 || opts.ServerName != "demo-nats-0" {
		t.Errorf("cluster: %d routes, port %d, server %q", len(opts.Routes), opts.Cluster.Port, opts.ServerName)
	}
	for _, u := range opts.Users {
		if pw[u.Username] == "" || u.Password != pw[u.Username] {
			t.Errorf("user %s: the server's password is not the Secret's", u.Username)
		}
	}
}

// With another prefix, the subjects and names are those hookbus uses with
// --prefix acme, as deploy/nats' README says to rewrite them.
func TestNATSConfigPrefix(t *testing.T) {
	opts, _ := natsConfig(t, mustRender(t, likeDeployNATS+"bus: {prefix: acme}\n"))
	sameUsers(t, opts, deployNATS(t, "acme"))
}

// A real nats-server runs the rendered configuration (on loopback, one
// node): each user signs in with the password of the users' Secret, and
// a wrong one is refused.
func TestNATSConfigServes(t *testing.T) {
	opts, pw := natsConfig(t, mustRender(t, likeDeployNATS))
	opts.CheckConfig = false
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", -1, 0
	opts.Cluster = server.ClusterOpts{}
	opts.Routes = nil
	opts.StoreDir = t.TempDir()
	opts.PidFile = ""
	opts.NoSigs = true
	opts.NoLog = true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	for user, p := range pw {
		nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(user, p), nats.NoReconnect())
		if err != nil {
			t.Errorf("%s with the Secret's password: %v", user, err)
			continue
		}
		nc.Close()
	}
	if nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("loop", pw["admin"]), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Error("loop signed in with admin's password")
	}
}
