package budgets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/nats-io/nats.go/jetstream"
)

// What a budget used is counted in the usage stream (bus.Names.Usage), one
// record per charged step, appended and never changed: the stream refuses
// roll-ups, purges and deletes, so a worker can add to what a budget used
// but never take from it. A budget's use in a period is the sum of its
// records stored (server time) since the period began; the use entry of
// the budgets bucket holds only the steps under way and the estimate of
// the next one. See docs/PROTOCOL.md, "Shared budgets".

// record is one charged step in the usage stream.
type record struct {
	Run     string  `json:"run,omitempty"`
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
}

// tally is what one budget's records add up to since a period began, up
// to the stream sequence last.
type tally struct {
	since   time.Time
	last    uint64
	tokens  int64
	costUSD float64
}

// add counts one record; a negative or non-finite amount counts as zero.
func (t *tally) add(r record) {
	if r.Tokens > 0 {
		t.tokens += r.Tokens
	}
	if r.CostUSD > 0 && !math.IsInf(r.CostUSD, 0) {
		t.costUSD += r.CostUSD
	}
}

func usageSubject(b *bus.Bus, l Limit, session string) string {
	if !l.PerSession {
		session = ""
	}
	return bus.UsageSubject(b.Subjects(), l.Agent, session)
}

// record appends a charged step to the usage stream, acknowledged.
func (s *Budgets) record(ctx context.Context, l Limit, session, run string, tokens int64, cost float64) error {
	body, _ := json.Marshal(record{Run: run, Tokens: tokens, CostUSD: cost}) // cannot fail
	subj := usageSubject(s.b, l, session)
	if _, err := s.b.JetStream().Publish(ctx, subj, body); err != nil {
		return fmt.Errorf("%w: record use on %s in stream %s: %w", ErrRegistry, subj, s.b.Names().Usage, deadline.Err(ctx, err))
	}
	return nil
}

// spent returns what the budget (l, session) used since the period began,
// from its records: the ones read before are kept, the newer ones read.
func (s *Budgets) spent(ctx context.Context, l Limit, session string, since time.Time) (tally, error) {
	subj := usageSubject(s.b, l, session)
	fail := func(err error) (tally, error) {
		return tally{}, fmt.Errorf("%w: read use on %s in stream %s: %w", ErrRegistry, subj, s.b.Names().Usage, deadline.Err(ctx, err))
	}
	st, err := s.usage(ctx)
	if err != nil {
		return fail(err)
	}
	s.mu.Lock()
	t := s.tallies[subj]
	s.mu.Unlock()
	if !t.since.Equal(since) {
		t = tally{since: since}
	}
	last, err := st.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return t, nil
	}
	if err != nil {
		return fail(err)
	}
	if last.Sequence <= t.last {
		return t, nil
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}}
	if t.last > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, t.last+1
	} else {
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	cons, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	for t.last < last.Sequence {
		batch, err := cons.FetchNoWait(256)
		if err != nil {
			return fail(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return fail(err)
			}
			t.last = md.Sequence.Stream
			if md.Timestamp.Before(since) {
				continue
			}
			var r record
			if json.Unmarshal(m.Data(), &r) == nil {
				t.add(r)
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fail(err)
		}
		if n == 0 {
			break // nothing newer: the records before since were not delivered
		}
	}
	t.last = max(t.last, last.Sequence)
	s.mu.Lock()
	s.tallies[subj] = t
	s.mu.Unlock()
	return t, nil
}

// usage looks the usage stream up once.
func (s *Budgets) usage(ctx context.Context) (jetstream.Stream, error) {
	return s.usageStream.Get(ctx, func(ctx context.Context) (jetstream.Stream, error) {
		return s.b.JetStream().Stream(ctx, s.b.Names().Usage)
	})
}
