package cli

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/nats-io/nats-server/v2/server"
)

// serverAt starts a real nats-server on port (JetStream in dir), and
// returns it; the caller shuts it down.
func serverAt(t *testing.T, port int, dir string) *server.Server {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return srv
}

// A command whose NATS goes away says so on stderr while it waits: what
// waits and for how long, and again when NATS is back.
func TestOutageIsSaid(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	srv := serverAt(t, port, dir)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)

	var said bustest.Buffer
	c := ConnFlags{App: &App{Name: "loop", Err: &said}, Embeds: true, Attach: true, NATS: url, Outage: 90 * time.Second}
	conn, err := c.Open(testContext(t), "test", slog.New(slog.DiscardHandler), ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	srv.Shutdown()
	srv.WaitForShutdown()
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		return strings.Contains(said.String(), "loop: NATS at "+url+" is away") &&
			strings.Contains(said.String(), "waiting for it to come back; a run's events wait at most 1m30s (--outage), then its attempt stops")
	}, "the outage is not said:\n%s", &said)
	srv = serverAt(t, port, dir)
	defer srv.Shutdown()
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return strings.Contains(said.String(), "loop: NATS is back at "+url+" after ") },
		"the end of the outage is not said:\n%s", &said)
}

// The reminders say how long NATS has been away, and stop when it is back.
func TestOutageReminders(t *testing.T) {
	var said bustest.Buffer
	r := newOutageReporter(func(format string, args ...any) {
		_, _ = said.Write([]byte(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n"))
	}, "nats://x", 0)
	r.reminder = 10 * time.Millisecond
	start := time.Now()
	stop := make(chan struct{})
	go r.remind(start, stop)
	bustest.Eventuallyf(t, 5*time.Second, func() bool { return strings.Count(said.String(), "NATS still away after") >= 2 }, "no reminders:\n%s", &said)
	close(stop)
	if !strings.Contains(said.String(), "the command reconnects until it is interrupted") {
		t.Fatalf("a command without --outage: %s", &said)
	}
}
