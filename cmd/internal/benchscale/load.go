package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// driver submits runs and counts those that end, on its own connection.
type driver struct {
	b  *bus.Bus
	q  *runs.Queue
	nc *nats.Conn
}

// submitters is how many goroutines submit runs (each Submit waits for
// JetStream's ack).
const submitters = 32

func (d *driver) submit(ctx context.Context, agent string) error {
	req := &events.RunRequest{RunID: events.NewID(), AgentID: agent, SessionID: events.NewID(), Prompt: "what is 6*7?", SubmittedAt: time.Now().UTC()}
	return d.q.Submit(ctx, req)
}

// evtPrefix is "<prefix>.evt.", the start of every event subject.
func (d *driver) evtPrefix() string {
	return strings.TrimSuffix(d.b.Subjects().AllEvents(), ">")
}

// ends counts the runs of agent that end (run.completed or run.failed),
// calling onEnd for each, from a core subscription on the events' subjects.
type ends struct {
	sub           *nats.Subscription
	ended, failed atomic.Int64
	onEnd         func()
}

func (d *driver) watchEnds(agent string, onEnd func()) (*ends, error) {
	e := &ends{onEnd: onEnd}
	subj := d.evtPrefix() + agent + ".*.run.*"
	sub, err := d.nc.Subscribe(subj, func(m *nats.Msg) {
		failed := strings.HasSuffix(m.Subject, ".run.failed")
		if !failed && !strings.HasSuffix(m.Subject, ".run.completed") {
			return
		}
		if failed {
			e.failed.Add(1)
		}
		e.ended.Add(1)
		if e.onEnd != nil {
			e.onEnd()
		}
	})
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}
	e.sub = sub
	return e, d.nc.Flush()
}

// waitEnded polls until n runs ended, or fails after timeout.
func (e *ends) waitEnded(ctx context.Context, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for e.ended.Load() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d of %d runs ended after %s", errStalled, e.ended.Load(), n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// levelTimes are the moments of a closed-loop level.
type levelTimes struct {
	from, to  sample // the measured window
	submitted int64
	failed    int64
}

// closedLoop keeps n runs of agent in flight: n start over ramp, and each
// run that ends starts another, until the window (which begins warm after
// the start) is over; then it waits for the runs in flight to end.
func (d *driver) closedLoop(ctx context.Context, agent string, n int, ramp, warm, window time.Duration, roles []role) (levelTimes, error) {
	tokens := make(chan struct{}, n) // in flight + tokens never exceed n: sends never block
	var stopping atomic.Bool
	e, err := d.watchEnds(agent, func() {
		if !stopping.Load() {
			tokens <- struct{}{}
		}
	})
	if err != nil {
		return levelTimes{}, err
	}
	defer func() { _ = e.sub.Unsubscribe() }()

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var submitted atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range submitters {
		wg.Go(func() {
			for {
				select {
				case <-sctx.Done():
					return
				case <-tokens:
				}
				if stopping.Load() {
					continue
				}
				if err := d.submit(sctx, agent); err != nil {
					if sctx.Err() == nil {
						firstErr.CompareAndSwap(nil, err)
					}
					continue
				}
				submitted.Add(1)
			}
		})
	}
	start := time.Now()
	for i := range n {
		tokens <- struct{}{}
		if d := time.Until(start.Add(ramp * time.Duration(i+1) / time.Duration(n))); d > 0 {
			time.Sleep(d)
		}
	}
	time.Sleep(time.Until(start.Add(warm)))
	lt := levelTimes{from: takeSample(roles)}
	time.Sleep(window)
	lt.to = takeSample(roles)
	stopping.Store(true)
	cancel()
	wg.Wait()
	if v := firstErr.Load(); v != nil {
		return lt, fmt.Errorf("submitting a run: %w", v.(error))
	}
	lt.submitted = submitted.Load()
	if err := e.waitEnded(ctx, lt.submitted, 2*time.Minute); err != nil {
		return lt, err
	}
	lt.failed = e.failed.Load()
	return lt, nil
}

// burst submits runs of agent as fast as it can and waits until every one
// ended; the samples are taken before the first submission and after the
// last end.
func (d *driver) burst(ctx context.Context, agent string, runs int, roles []role) (from, to sample, failed int64, err error) {
	e, err := d.watchEnds(agent, nil)
	if err != nil {
		return from, to, 0, err
	}
	defer func() { _ = e.sub.Unsubscribe() }()
	next := make(chan struct{}, runs)
	for range runs {
		next <- struct{}{}
	}
	close(next)
	from = takeSample(roles)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range submitters {
		wg.Go(func() {
			for range next {
				if err := d.submit(ctx, agent); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if v := firstErr.Load(); v != nil {
		return from, to, 0, fmt.Errorf("submitting a run: %w", v.(error))
	}
	if err := e.waitEnded(ctx, int64(runs), 5*time.Minute); err != nil {
		return from, to, 0, err
	}
	to = takeSample(roles)
	return from, to, e.failed.Load(), nil
}
