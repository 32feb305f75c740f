package natsconf_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// wait bounds every poll and every expected asynchronous error.
const wait = 10 * time.Second

// confOptions loads a configuration file as `nats-server -c name` does
// (server.ProcessConfigFile, includes resolved next to the file) and
// rewrites only what cannot be shared by tests running on one machine: the
// client listener goes to 127.0.0.1 on a free port, monitoring is turned
// off, JetStream's store goes to t.TempDir(), logging and signal handling
// are off. Permissions, accounts, JetStream settings and cluster settings
// stay as the file has them; cluster ports are the caller's to rewrite.
func confOptions(t *testing.T, name string) *server.Options {
	t.Helper()
	opts, err := server.ProcessConfigFile(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	opts.Host = "127.0.0.1"
	opts.Port = server.RANDOM_PORT
	opts.HTTPHost, opts.HTTPPort = "", 0
	opts.StoreDir = t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	return opts
}

// startServer starts a server with opts and waits until it accepts
// clients; t.Cleanup shuts it down and waits for the shutdown.
func startServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("new server %s: %v", opts.ServerName, err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	s.Start()
	if !s.ReadyForConnections(wait) {
		t.Fatalf("server %s not ready within %v", opts.ServerName, wait)
	}
	return s
}

// password returns the password the configuration gives user.
func password(t testing.TB, opts *server.Options, user string) string {
	t.Helper()
	for _, u := range opts.Users {
		if u.Username == user {
			return u.Password
		}
	}
	t.Fatalf("no user %q in the configuration", user)
	return ""
}

// asyncErrors receives a connection's asynchronous errors (nats.ErrorHandler):
// the server reports a permissions violation that way, not as the return
// value of Subscribe or Publish.
type asyncErrors chan error

// connect connects to s as user, with the password the configuration
// gives it; t.Cleanup closes the connection.
func connect(t testing.TB, s *server.Server, opts *server.Options, user string) (*nats.Conn, asyncErrors) {
	t.Helper()
	errs := make(asyncErrors, 64)
	nc, err := nats.Connect(s.ClientURL(),
		nats.Name("natsconf-test-"+user),
		nats.UserInfo(user, password(t, opts, user)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default: // the test reads them; a flood is not what it looks for
			}
		}),
	)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// wantViolation waits (up to wait) for the server's permissions violation
// for op ("Publish to" or "Subscription to") on subject. Other errors seen
// meanwhile are reported if the violation never comes.
func (e asyncErrors) wantViolation(t *testing.T, op, subject string) {
	t.Helper()
	want := fmt.Sprintf("Permissions Violation for %s %q", op, subject)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var seen []string
	for {
		select {
		case err := <-e:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), want) {
				return
			}
			seen = append(seen, err.Error())
		case <-timer.C:
			t.Fatalf("no %q within %v (other errors: %q)", want, wait, seen)
		}
	}
}

// denyPublish publishes on subject as nc and asserts the server refused it.
// The flush makes the server process the publish before the PONG, so the
// refusal has been read when LastError is checked; the ErrorHandler
// reports it too.
func denyPublish(t *testing.T, nc *nats.Conn, errs asyncErrors, subject string) {
	t.Helper()
	if err := nc.Publish(subject, []byte(`{}`)); err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
	if err := nc.FlushTimeout(wait); err != nil {
		t.Fatalf("flush: %v", err)
	}
	errs.wantViolation(t, "Publish to", subject)
}

// noErrors asserts that the server reported no error on nc so far: after a
// flush every -ERR sent before the PONG has been read into LastError.
func noErrors(t *testing.T, nc *nats.Conn) {
	t.Helper()
	if err := nc.FlushTimeout(wait); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if err := nc.LastError(); err != nil {
		t.Fatalf("%s: unexpected server error: %v", nc.Opts.Name, err)
	}
}

// eventually polls cond until it holds or wait passes (bustest's poll).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bustest.Eventuallyf(t, wait, cond, "%s", what)
}

// freePorts returns n TCP ports free on 127.0.0.1 a moment ago. Route ports
// must be known before the servers start (each node's routes name the
// others), so they cannot be -1; another process could take one in the
// meantime, which would fail the test loudly, not silently.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("reserve a port: %v", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}
