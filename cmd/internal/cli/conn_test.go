package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/nats-io/nats-server/v2/server"
)

// closedURL is a nats URL where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "nats://" + addr
}

// makeStore leaves a stopped hookbus store (provisioned) in dir.
func makeStore(t *testing.T, dir string) {
	t.Helper()
	e, err := embedded.Start(testContext(t), embedded.Config{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, err := bus.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Provision(testContext(t)); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, c ConnFlags, mode Mode) (*Conn, error) {
	t.Helper()
	conn, err := c.Open(testContext(t), "test", slog.New(slog.DiscardHandler), mode)
	if err == nil {
		t.Cleanup(conn.Close)
	}
	return conn, err
}

// The rule of observer's help: with no --nats, --store or $NATS_URL, the
// server listening at the default address; when none listens there,
// ./.hookbus if it exists.
func TestDefaultServerElseStore(t *testing.T) {
	t.Setenv("NATS_URL", "")
	dir := t.TempDir()
	makeStore(t, filepath.Join(dir, DefaultStore))
	t.Chdir(dir)

	// Nothing listens: the store.
	c, err := open(t, ConnFlags{StoreFallback: true, DefaultURL: closedURL(t)}, ReadOnly)
	if err != nil || c.Where != "store "+DefaultStore {
		t.Fatalf("nothing listening, ./.hookbus there: %v, %+v", err, c)
	}
	c.Close()

	// A server listens: that server, though ./.hookbus is there.
	live := startServer(t, nil)
	c, err = open(t, ConnFlags{StoreFallback: true, DefaultURL: live}, ReadOnly)
	if err != nil || c.Where != live {
		t.Fatalf("a server listening: %v, %+v", err, c)
	}

	// tail has no fallback: it needs a running server.
	down := closedURL(t)
	_, err = open(t, ConnFlags{DefaultURL: down}, ReadOnly)
	if err == nil || !strings.Contains(err.Error(), "no server listens at "+down) || !strings.Contains(err.Error(), "loop server") {
		t.Fatalf("no fallback, nothing listening: %v", err)
	}

	// No store and nothing listening: the connection error says what to do.
	t.Chdir(t.TempDir())
	_, err = open(t, ConnFlags{StoreFallback: true, DefaultURL: down}, ReadOnly)
	if err == nil || !strings.Contains(err.Error(), "no server listens at "+down) {
		t.Fatalf("no store, nothing listening: %v", err)
	}

	// $NATS_URL comes before the default and the store.
	t.Setenv("NATS_URL", live)
	t.Chdir(dir)
	c, err = open(t, ConnFlags{StoreFallback: true, DefaultURL: down}, ReadOnly)
	if err != nil || c.Where != live {
		t.Fatalf("$NATS_URL: %v, %+v", err, c)
	}
}

// A command that cannot embed opens only an existing store, whether it
// reads or writes: an empty or missing directory is refused alike, and is
// left as it was.
func TestStoreMustExist(t *testing.T) {
	empty := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nope")
	for _, dir := range []string{empty, missing} {
		for _, mode := range []Mode{ReadOnly, ProvisionStore} {
			_, err := open(t, ConnFlags{Store: dir}, mode)
			if !errors.Is(err, embedded.ErrNoStore) || !strings.Contains(err.Error(), dir) {
				t.Errorf("store %s, mode %d: %v; want ErrNoStore naming it", dir, mode, err)
			}
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Fatalf("the empty directory was written: %v", entries)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("the missing directory was created: %v", err)
	}
	// A store that exists is provisioned when written to, not when read.
	dir := filepath.Join(t.TempDir(), "s")
	makeStore(t, dir)
	if _, err := open(t, ConnFlags{Store: dir}, ProvisionStore); err != nil {
		t.Fatal(err)
	}
}

// A refused publish ends a guarded wait at once, as ErrPermission naming
// the subject, instead of at the request's deadline.
func TestGuardReportsPermissionDenied(t *testing.T) {
	url := startServer(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "ro", Password: "ro-pass", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Deny: []string{"forbidden.>"}},
		}}}
	})
	c, err := openWith(t, "--nats", url, "--user", "ro", "--password", "ro-pass")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := c.Guard(context.Background()) // no deadline: only the refusal can end it
	defer stop()
	_, err = c.NC.RequestWithContext(ctx, "forbidden.x", nil)
	err = c.Explain(err)
	if !errors.Is(err, ErrPermission) || !strings.Contains(err.Error(), `Permissions Violation for Publish to "forbidden.x"`) {
		t.Fatalf("request to a denied subject: %v", err)
	}
	// Once refused, a new guard ends at once.
	ctx2, stop2 := c.Guard(context.Background())
	defer stop2()
	<-ctx2.Done()
	if !errors.Is(context.Cause(ctx2), ErrPermission) {
		t.Fatalf("cause %v", context.Cause(ctx2))
	}
	if err := (&Conn{}).Explain(io.EOF); err != io.EOF {
		t.Fatalf("Explain without a refusal: %v", err)
	}
}
