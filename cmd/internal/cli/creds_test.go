package cli

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/pflag"
)

// openWith parses args as a command's connection flags and opens the bus
// read-only.
func openWith(t *testing.T, args ...string) (*Conn, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c ConnFlags
	c.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	conn, err := c.Open(testContext(t), "test", slog.New(slog.DiscardHandler), ReadOnly)
	if err == nil {
		t.Cleanup(conn.Close)
	}
	return conn, err
}

// Each kind of credentials connects to a server that requires it.
func TestCredentialsConnect(t *testing.T) {
	t.Run("user and password", func(t *testing.T) {
		url := startServer(t, func(o *server.Options) { o.Users = []*server.User{{Username: "loop", Password: "pw-1234"}} })
		if _, err := openWith(t, "--nats", url, "--user", "loop", "--password", "pw-1234"); err != nil {
			t.Fatal(err)
		}
		t.Setenv("NATS_USER", "loop")
		t.Setenv("NATS_PASSWORD", "pw-1234")
		c, err := openWith(t, "--nats", url)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(c.Where, "pw-1234") {
			t.Fatalf("Where shows the password: %s", c.Where)
		}
		t.Setenv("NATS_PASSWORD", "wrong-pw")
		if _, err := openWith(t, "--nats", url); err == nil || !strings.Contains(err.Error(), "Authorization Violation") || strings.Contains(err.Error(), "wrong-pw") ||
			!strings.Contains(err.Error(), "refused the credentials given") {
			t.Fatalf("a wrong password: %v", err)
		}
		t.Setenv("NATS_USER", "")
		t.Setenv("NATS_PASSWORD", "")
		if _, err := openWith(t, "--nats", url); err == nil || !strings.Contains(err.Error(), "wants credentials and none were given") || !strings.Contains(err.Error(), "--creds") {
			t.Fatalf("no credentials: %v", err)
		}
	})
	t.Run("token", func(t *testing.T) {
		url := startServer(t, func(o *server.Options) { o.Authorization = "tok-5678" })
		if _, err := openWith(t, "--nats", url, "--token", "tok-5678"); err != nil {
			t.Fatal(err)
		}
		t.Setenv("NATS_TOKEN", "tok-5678")
		if _, err := openWith(t, "--nats", url); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("nkey seed file", func(t *testing.T) {
		url, seed := nkeyServer(t)
		if _, err := openWith(t, "--nats", url, "--nkey", seed); err != nil {
			t.Fatal(err)
		}
		if _, err := openWith(t, "--nats", url); err == nil {
			t.Fatal("connected without the nkey")
		}
	})
	t.Run("credentials file", func(t *testing.T) {
		url, creds := operatorServer(t)
		c, err := openWith(t, "--nats", url, "--creds", creds)
		if err != nil {
			t.Fatal(err)
		}
		// JetStream works for the account: the bus is usable.
		if err := c.Bus.Provision(testContext(t)); err != nil {
			t.Fatal(err)
		}
		t.Setenv("NATS_CREDS", creds)
		if _, err := openWith(t, "--nats", url); err != nil {
			t.Fatal(err)
		}
	})
}

// Contradictory or useless credentials are usage mistakes, named; nothing
// in the error is a secret.
func TestCredentialsMistakes(t *testing.T) {
	seed := writeFile(t, "seed.nk", []byte("SUAFAKE"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nats", "nats://127.0.0.1:1", "--user", "u", "--password", "pw-9999", "--token", "tk-9999"}, "give one kind of credentials, not --user/--password and --token"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--creds", seed, "--nkey", seed}, "not --creds and --nkey"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--password", "pw-9999"}, "--user and --password go together"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--user", "u"}, "--user and --password go together"},
		{[]string{"--nats", "nats://u:pw-9999@127.0.0.1:1", "--user", "u", "--password", "pw-9999"}, "nats://u:xxxxx@127.0.0.1:1 carries credentials and so does --user/--password"},
		{[]string{"--store", t.TempDir(), "--user", "u", "--password", "pw-9999"}, "credentials are for a server (--nats), not a store directory"},
		{[]string{"--user", "u", "--password", "pw-9999"}, "credentials are for a server: give --nats URL"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--creds", "/nonexistent/x.creds"}, "--creds: open /nonexistent/x.creds"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--nkey", seed}, "--nkey " + seed + ": not an nkey seed file"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--tls-ca", "/nonexistent/ca.pem"}, "--tls-ca: open /nonexistent/ca.pem"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--store", "x"}, "give --nats or --store, not both"},
	} {
		_, err := openWith(t, tc.args...)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "pw-9999") || strings.Contains(err.Error(), "tk-9999") {
			t.Errorf("%q: %v; want a usage error saying %q, with no secret", tc.args, err, tc.want)
		}
	}
	// Credentials in the environment do not stop a command from opening a
	// store: they are ambient, not a request.
	t.Setenv("NATS_USER", "u")
	t.Setenv("NATS_PASSWORD", "pw")
	if _, err := openWith(t, "--store", t.TempDir()); errors.Is(err, ErrUsage) {
		t.Fatalf("a store with $NATS_USER set: %v", err)
	}
}

// No server at the address given: the error names it and how to start one.
func TestNoServerNamesTheAddress(t *testing.T) {
	_, err := openWith(t, "--nats", "nats://127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "no server answers at nats://127.0.0.1:1") || !strings.Contains(err.Error(), "loop server --listen") {
		t.Fatalf("no server: %v", err)
	}
}
