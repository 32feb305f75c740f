package bridge

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
)

// Sessions that never end. A coding agent whose hooks miss its session's
// end (a CLI killed, a hook left out of its settings) leaves its run open
// for ever. CloseIdle ends such a run in the record: run.completed with
// reason ReasonIdle, appended on condition that the session's last event is
// still the one read (AppendAfter), so that of several closers (every
// process that sweeps) exactly one records the end, and none closes a
// session that spoke again in the meantime.

// ReasonIdle is the reason of the run.completed that CloseIdle records.
const ReasonIdle = events.ReasonIdle

// CloseIdle ends the session's open run when its last event is older than
// idle at now: run.completed with reason "idle", fenced on that last event.
// It reports whether it recorded the end; false (and no error) when the
// session has no open run, spoke within idle, or another writer appended
// first (which ends this closer's claim to it).
func (b *Bridge) CloseIdle(ctx context.Context, session string, idle time.Duration, now time.Time) (bool, error) {
	st, err := b.read(ctx, session, false)
	if err != nil {
		return false, err
	}
	last := st.heads.Last(st.run)
	if !st.open() || last == nil || now.Sub(last.Time) < idle {
		return false, nil
	}
	e, err := events.New(events.StageRunCompleted,
		events.Meta{Source: b.cfg.Source, AgentID: b.cfg.Agent, SessionID: session, RunID: st.run},
		events.RunCompleted{Reason: ReasonIdle, Detail: fmt.Sprintf("no event from %s for %s (closed as idle at %s)",
			b.title(), now.Sub(last.Time).Round(time.Second), now.UTC().Format(time.RFC3339))})
	if err != nil {
		return false, fmt.Errorf("bridge: close idle session %s: %w", session, err)
	}
	st.chain(st.run).Next(e)
	_, err = b.cfg.Store.AppendAfter(ctx, e, st.last)
	b.cfg.Cache.forget(b.cfg.Agent, session) // closed, or spoke since: either way, read it again
	if err != nil {
		if isFenced(err) {
			return false, nil // it spoke, or another closer won
		}
		return false, fmt.Errorf("bridge: close idle session %s: %w", session, err)
	}
	b.cfg.Logger.Info("bridge: idle session closed", "agent", b.cfg.Agent, "session", session, "run", st.run, "idle", idle)
	return true, nil
}

// IdleCloser sweeps the sessions of some bridges: it follows their agents'
// events and ends, with CloseIdle, the open runs of sessions silent for
// longer than Idle. Run it in a long-running process (loop server
// --close-idle, loop gateway --close-idle, loop close-idle); several may
// run at once.
type IdleCloser struct {
	// Bus is where the sessions are recorded (required).
	Bus *bus.Bus
	// Bridges are the bridges whose sessions are swept, one per agent id.
	Bridges []*Bridge
	// Idle is how long a session may be silent before its run is closed.
	Idle time.Duration
	// Since bounds how far back the first read of the record goes: an
	// open run whose last event is older is not seen (default 7 days).
	Since time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Run sweeps until ctx ends; it returns ctx's error, or the error that
// stopped it following the record.
func (c *IdleCloser) Run(ctx context.Context) error {
	if c.Bus == nil || len(c.Bridges) == 0 || c.Idle <= 0 {
		return fmt.Errorf("%w: an IdleCloser needs a Bus, Bridges and a positive Idle", ErrInvalidConfig)
	}
	log := cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	since := c.Since
	if since <= 0 {
		since = 7 * 24 * time.Hour
	}
	type key struct{ agent, session string }
	var mu sync.Mutex
	last := map[key]time.Time{} // sessions whose last event leaves a run open
	errs := make(chan error, len(c.Bridges))
	for _, br := range c.Bridges {
		go func() {
			errs <- c.Bus.Tail(ctx, bus.Filter{Agent: br.cfg.Agent, Since: time.Now().Add(-since)}, func(e *events.Event) error {
				k := key{e.AgentID, e.SessionID}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed:
					delete(last, k)
				default:
					last[k] = e.Time
				}
				return nil
			})
		}()
	}
	tick := min(max(c.Idle/10, time.Second), time.Minute)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errs:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("bridge: idle sessions: following the record: %w", err)
		case <-t.C:
		}
		now := time.Now()
		mu.Lock()
		var due []key
		for k, at := range last {
			if now.Sub(at) >= c.Idle {
				due = append(due, k)
			}
		}
		mu.Unlock()
		for _, k := range due {
			for _, br := range c.Bridges {
				if br.cfg.Agent != k.agent {
					continue
				}
				closed, err := br.CloseIdle(ctx, k.session, c.Idle, now)
				switch {
				case err != nil && ctx.Err() == nil:
					log.Warn("bridge: idle session not closed", "agent", k.agent, "session", k.session, "err", err)
				case err == nil && !closed:
					// Not open, or spoke since: the record says so.
					mu.Lock()
					if at, ok := last[k]; ok && now.Sub(at) >= c.Idle {
						delete(last, k)
					}
					mu.Unlock()
				}
			}
		}
	}
}
