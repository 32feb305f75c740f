package cli

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/pflag"
)

// natsContext writes a context of the nats CLI under $XDG_CONFIG_HOME (a
// temporary one) and returns its file.
func natsContext(t *testing.T, name, json string) string {
	t.Helper()
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "nats", "context")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".json")
	if err := os.WriteFile(p, []byte(json), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// command opens the bus as a command given args would, saying which bus it
// uses on the returned builder.
func command(t *testing.T, c ConnFlags, args ...string) (*Conn, *strings.Builder, error) {
	t.Helper()
	var stderr strings.Builder
	c.App = &App{Name: "observer", Err: &stderr}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c.Register(fs)
	fs.StringVar(&c.App.Config, "config", "", "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	conn, err := c.Open(testContext(t), "test", slog.New(slog.DiscardHandler), ReadOnly)
	if err == nil {
		t.Cleanup(conn.Close)
	}
	return conn, &stderr, err
}

// A context of the nats CLI names the server and its credentials; flags
// and $NATS_* variables win over it, as for the nats CLI; the command says
// which context it uses.
func TestNATSContext(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("NATS_URL", "")
	t.Setenv("NATS_CONTEXT", "")
	url := startServer(t, func(o *server.Options) { o.Users = []*server.User{{Username: "ops", Password: "ctx-pw-1"}} })
	natsContext(t, "prod", `{"description": "the fleet", "url": "`+url+`", "user": "ops", "password": "ctx-pw-1", "color_scheme": "dark"}`)

	c, said, err := command(t, ConnFlags{}, "--context", "prod")
	if err != nil {
		t.Fatal(err)
	}
	if c.Where != url || !strings.Contains(said.String(), "observer: bus "+url+" (NATS context prod)") {
		t.Fatalf("--context prod: %s, said %q", c.Where, said)
	}
	// $NATS_CONTEXT names it too.
	t.Setenv("NATS_CONTEXT", "prod")
	if _, _, err := command(t, ConnFlags{}); err != nil {
		t.Fatalf("$NATS_CONTEXT: %v", err)
	}
	// A flag's credentials win over the context's.
	if _, _, err := command(t, ConnFlags{}, "--user", "ops", "--password", "wrong"); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("--password over the context's: %v", err)
	}
	// The password may be a reference to a variable, as the nats CLI reads it.
	natsContext(t, "env", `{"url": "`+url+`", "user": "ops", "password": "env://HOOKBUS_TEST_PW"}`)
	t.Setenv("HOOKBUS_TEST_PW", "ctx-pw-1")
	if _, _, err := command(t, ConnFlags{}, "--context", "env"); err != nil {
		t.Fatalf("env:// password: %v", err)
	}
	// A context file given by path.
	file := filepath.Join(t.TempDir(), "ci.json")
	if err := os.WriteFile(file, []byte(`{"url": "`+url+`", "user": "ops", "password": "ctx-pw-1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := command(t, ConnFlags{}, "--context", file); err != nil {
		t.Fatalf("a context file: %v", err)
	}
}

// A context as the nats CLI writes it (natscli v0.5.0's "nats context add
// prod --server URL --user ops --password PW --tlsca --tlscert --tlskey",
// every setting present, most empty) is read as it is.
func TestNATSCLIContextFile(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("NATS_URL", "")
	raw, err := os.ReadFile("testdata/natscli-context.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadNATSContext(natsContext(t, "prod", string(raw)), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := NATSContext{Name: c.Name, Path: c.Path, Description: "the fleet", URL: "nats://127.0.0.1:4333", User: "ops", Password: "secret",
		Cert: "/tmp/c.pem", Key: "/tmp/k.pem", CA: "/tmp/ca.pem"}
	if *c != want {
		t.Fatalf("read %+v\nwant %+v", *c, want)
	}
}

// What a context holds that hookbus cannot honour is refused, naming it;
// so are a missing context and a context beside --store.
func TestNATSContextRefusals(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("NATS_URL", "")
	t.Setenv("NATS_CONTEXT", "")
	natsContext(t, "domain", `{"url": "nats://127.0.0.1:1", "jetstream_domain": "hub"}`)
	natsContext(t, "nsc", `{"nsc": "nsc://op/acct/user"}`)
	natsContext(t, "op", `{"url": "nats://127.0.0.1:1", "creds": "op://vault/creds"}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--context", "domain"}, "sets jetstream_domain, which hookbus does not support"},
		{[]string{"--context", "nsc"}, "sets nsc, which hookbus does not support"},
		{[]string{"--context", "op"}, `creds: "op://vault/creds": hookbus reads files`},
		{[]string{"--context", "nope"}, "nope.json does not exist (nats context add nope --server URL creates it"},
		{[]string{"--context", "domain", "--store", t.TempDir()}, "give --context or --store, not both"},
	} {
		_, _, err := command(t, ConnFlags{}, tc.args...)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want a usage error saying %q", tc.args, err, tc.want)
		}
	}
}

// The config file holds the prefix, the replicas and the context; a flag
// given wins, a context's section wins over the top level, and an unknown
// key is refused.
func TestConfigFile(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("NATS_URL", "")
	t.Setenv("NATS_CONTEXT", "")
	t.Setenv(ConfigEnv, "")
	url := startServer(t, nil)
	natsContext(t, "dev", `{"url": "`+url+`"}`)
	cfg := writeFile(t, "config.yaml", []byte("context: dev\nprefix: acme\nreplicas: 1\ncontexts:\n  dev:\n    prefix: devbus\n    outage: 30s\n"))

	var c ConnFlags
	_, said, err := command(t, c, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(said.String(), "(NATS context dev), prefix devbus, config "+cfg) {
		t.Fatalf("said %q", said)
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c = ConnFlags{App: &App{Config: cfg, Err: &strings.Builder{}}}
	c.Register(fs)
	if err := fs.Parse([]string{"--prefix", "mine"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.resolve(os.Getenv); err != nil || c.Prefix != "mine" {
		t.Fatalf("--prefix over the config file: %q %v", c.Prefix, err)
	}
	// The default file, when it exists, and $HOOKBUS_CONFIG.
	def := DefaultConfigPath(os.Getenv)
	if err := os.MkdirAll(filepath.Dir(def), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(def, []byte("prefix: fromdefault\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadConfig("", os.Getenv); err != nil || got.Prefix != "fromdefault" {
		t.Fatalf("the default file: %+v %v", got, err)
	}
	t.Setenv(ConfigEnv, cfg)
	if got, err := LoadConfig("", os.Getenv); err != nil || got.For("dev").Prefix != "devbus" || got.For("other").Prefix != "acme" {
		t.Fatalf("$HOOKBUS_CONFIG: %+v %v", got, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"prefx: x\n", "field prefx not found"},
		{"contexts:\n  a:\n    replicas: -1\n", "contexts.a: replicas -1"},
		{"outage: soon\n", `outage "soon"`},
		{"prefix: a.b\n", "prefix"},
	} {
		p := writeFile(t, "bad.yaml", []byte(tc.yaml))
		if _, err := LoadConfig(p, os.Getenv); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: %v; want a usage error naming the file and saying %q", tc.yaml, err, tc.want)
		}
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing.yaml"), os.Getenv); !errors.Is(err, ErrUsage) {
		t.Fatalf("a config file named but missing: %v", err)
	}
}
