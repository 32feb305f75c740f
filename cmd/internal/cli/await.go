package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/bus"
)

// awaitBackoffMax is the longest pause between two tries of a step that
// waits for JetStream: a process starts at most this long after JetStream
// answers again.
const awaitBackoffMax = 2 * time.Second

// Await calls f until it succeeds or fails for a reason other than
// JetStream being unavailable (bus.Unavailable: no meta or stream leader
// during an election, a node away, the connection being re-established).
// While it waits, it says so on the command's stderr ("JetStream
// unavailable (...): waiting, up to 5m0s (--outage), to ..."), again every
// 30 s, and when JetStream answers. It gives up once the outage bound
// passes (--outage; bus.DefaultOutageWait for commands without one) or ctx
// ends, returning f's last error. what says what waits ("start taking
// runs").
func (c *Conn) Await(ctx context.Context, what string, f func(context.Context) error) error {
	since := time.Now()
	err := f(ctx)
	if err == nil || !bus.Unavailable(err) || c.outage <= 0 {
		return err
	}
	giveUp := since.Add(c.outage)
	c.say("JetStream unavailable (%s): waiting, up to %s (--outage), to %s", oneLine(err), c.outage, what)
	said := time.Now()
	for try := 1; ; try++ {
		now := time.Now()
		if !now.Before(giveUp) {
			return fmt.Errorf("%w (JetStream unavailable for %s, the outage bound: --outage)", err, now.Sub(since).Round(time.Second))
		}
		t := time.NewTimer(min(time.Duration(try)*250*time.Millisecond, awaitBackoffMax, giveUp.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		err = f(ctx)
		switch {
		case err == nil:
			c.say("JetStream available again after %s: going on to %s", time.Since(since).Round(time.Millisecond), what)
			return nil
		case !bus.Unavailable(err):
			return err
		case time.Since(said) >= outageReminder:
			said = time.Now()
			c.say("JetStream still unavailable after %s (%s): waiting, up to %s (--outage), to %s", said.Sub(since).Round(time.Second), oneLine(err), c.outage, what)
		}
	}
}

// oneLine is err's text cut to one short line, for a report.
func oneLine(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
