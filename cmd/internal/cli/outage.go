package cli

import (
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// outageReminder is how often a command says that NATS is still away.
const outageReminder = 30 * time.Second

// outageReporter says on a command's stderr when its connection to NATS
// is lost, what waits for it and for how long, every outageReminder
// while it stays away, and when it is back.
type outageReporter struct {
	say func(format string, args ...any)
	// waits says what waits and how long ("a run's events wait at most
	// 5m0s (--outage), then its attempt stops").
	waits    string
	servers  string // the server URLs, credentials masked
	reminder time.Duration

	mu    sync.Mutex
	since time.Time     // when the connection was lost (zero: connected)
	stop  chan struct{} // ends the reminders of the current outage
}

// newOutageReporter reports with say on a connection to servers (their
// URLs, credentials masked); outage is the bound of the command's appends
// (0: the command reconnects until it is interrupted).
func newOutageReporter(say func(string, ...any), servers string, outage time.Duration) *outageReporter {
	waits := "the command reconnects until it is interrupted"
	if outage > 0 {
		waits = fmt.Sprintf("a run's events wait at most %s (--outage), then its attempt stops (a queued run goes back to the queue, not failed)", outage)
	}
	return &outageReporter{say: say, waits: waits, servers: servers, reminder: outageReminder}
}

// options are the connection's handlers that report.
func (r *outageReporter) options() []nats.Option {
	return []nats.Option{nats.DisconnectErrHandler(r.disconnected), nats.ReconnectHandler(r.reconnected), nats.ClosedHandler(func(*nats.Conn) { r.end() })}
}

func (r *outageReporter) disconnected(nc *nats.Conn, err error) {
	if nc.IsClosed() {
		return // Close, not an outage
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.since.IsZero() {
		return
	}
	r.since, r.stop = time.Now(), make(chan struct{})
	why := ""
	if err != nil {
		why = " (" + err.Error() + ")"
	}
	r.say("NATS at %s is away%s: waiting for it to come back; %s", r.servers, why, r.waits)
	go r.remind(r.since, r.stop)
}

// remind says every reminder that NATS is still away, until stop.
func (r *outageReporter) remind(since time.Time, stop chan struct{}) {
	t := time.NewTicker(r.reminder)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			r.say("NATS still away after %s: waiting for it to come back; %s", now.Sub(since).Round(time.Second), r.waits)
		}
	}
}

func (r *outageReporter) reconnected(nc *nats.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.since.IsZero() {
		return
	}
	r.say("NATS is back at %s after %s", nc.ConnectedUrlRedacted(), time.Since(r.since).Round(time.Millisecond))
	r.endLocked()
}

// end stops the reminders.
func (r *outageReporter) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endLocked()
}

func (r *outageReporter) endLocked() {
	if r.stop != nil {
		close(r.stop)
	}
	r.since, r.stop = time.Time{}, nil
}
