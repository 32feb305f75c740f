package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// phaseEvents is what the stream holds of one phase (one agent id), the
// events created in [from, to] only.
type phaseEvents struct {
	events     int
	runsEnded  int
	hookFailed int
	rtt        []time.Duration // hook.decided latency_us of the plugin
	stored     []time.Duration // ce-time → the stream's stored timestamp
	msgs       []*nats.Msg     // every message of the phase, with keep
}

// readPhase reads the events of agent (evtPrefix is "<prefix>.evt.") from the events stream with an
// ordered consumer. With keep it also returns every message of the agent
// (window or not), as stored: subject, headers and body.
func readPhase(ctx context.Context, js jetstream.JetStream, stream, evtPrefix, agent, plugin string, from, to time.Time, keep bool) (*phaseEvents, error) {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{evtPrefix + agent + ".>"}})
	if err != nil {
		return nil, err
	}
	out := &phaseEvents{}
	for {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		got, last := 0, uint64(1)
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			last = meta.NumPending
			if keep {
				out.msgs = append(out.msgs, &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
			}
			e, err := events.Decode(events.Header(m.Headers()), m.Data())
			if err != nil {
				return nil, fmt.Errorf("stream sequence %d: %w", meta.Sequence.Stream, err)
			}
			if e.Time.Before(from) || e.Time.After(to) {
				continue
			}
			out.add(e, meta.Timestamp, plugin)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, err
		}
		if got == 0 || last == 0 {
			return out, nil
		}
	}
}

func (p *phaseEvents) add(e *events.Event, stored time.Time, plugin string) {
	p.events++
	p.stored = append(p.stored, stored.Sub(e.Time))
	switch e.Stage {
	case events.StageRunCompleted, events.StageRunFailed:
		p.runsEnded++
	case events.StageHookFailed:
		p.hookFailed++
	case events.StageHookDecided:
		var d events.HookDecided
		if err := e.DecodeData(&d); err == nil && d.Plugin == plugin {
			p.rtt = append(p.rtt, time.Duration(d.LatencyUS)*time.Microsecond)
		}
	}
}

// percentiles returns the p50 and p99 of ds (zero when empty).
func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2], s[(len(s)*99+99)/100-1]
}
