package runs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// Pending is a run request on the run queue: not taken yet, or taken
// and not acknowledged (a run in flight, or one handed back for another
// attempt).
type Pending struct {
	// Seq and Subject are where the request is stored.
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	RunID   string `json:"run_id"`
	AgentID string `json:"agent_id"`
	// SessionID is empty for a claim-checked request (its body is in the
	// payloads object store).
	SessionID string `json:"session_id,omitempty"`
	// Definition is the digest the request is pinned to ("" for none).
	Definition string `json:"definition,omitempty"`
	Resume     bool   `json:"resume,omitempty"`
	Compact    bool   `json:"compact,omitempty"`
	// Queued is when the request was stored.
	Queued time.Time `json:"queued"`
	// Taken is set when a worker received the request and has not
	// acknowledged it: it runs, or waits for another attempt.
	Taken bool `json:"taken"`
}

// maxQueuedRead bounds how many requests List reads.
const maxQueuedRead = 10000

// List lists the run requests on the run queue, oldest first (of
// agent, or of every agent for ""), reading the stream without consuming
// it: message gets by sequence, and the consumers' delivered sequences for
// Taken. At most 10000 are read; truncated is set when there were more. It
// returns an error wrapping ErrConsumer when the stream cannot be read.
func (q *Queue) List(ctx context.Context, agent string) (list []Pending, truncated bool, err error) {
	filters := []string{q.subj.AllRuns()}
	if agent != "" {
		run, err := q.subj.Run(agent)
		if err != nil {
			return nil, false, err
		}
		pinned, _ := q.subj.RunsPinned(agent)
		filters = []string{run, pinned}
	}
	ctx, cancel := q.withTimeout(ctx)
	defer cancel()
	st, err := q.js.Stream(ctx, q.names.Runs)
	if err != nil {
		return nil, false, fmt.Errorf("%w: stream %s: %w", ErrConsumer, q.names.Runs, deadline.Err(ctx, err))
	}
	for _, f := range filters {
		for seq := uint64(1); ; {
			if len(list) >= maxQueuedRead {
				return list, true, nil
			}
			m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(f))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				break
			}
			if err != nil {
				return nil, false, fmt.Errorf("%w: read %s at %d: %w", ErrConsumer, q.names.Runs, seq, deadline.Err(ctx, err))
			}
			list = append(list, q.queued(m))
			seq = m.Sequence + 1
		}
	}
	slices.SortFunc(list, func(a, b Pending) int { return cmp.Compare(a.Seq, b.Seq) })
	markTaken(ctx, st, list)
	return list, false, nil
}

// queued reads one stored request; an unreadable body leaves the fields it
// would give empty.
func (q *Queue) queued(m *jetstream.RawStreamMsg) Pending {
	p := Pending{Seq: m.Sequence, Subject: m.Subject, Queued: m.Time}
	p.AgentID, p.Definition, _ = q.subj.ParseRun(m.Subject)
	if ref := m.Header.Get(RefHeader); ref != "" {
		// <bucket>/run/<run id>/<hash>
		parts := strings.Split(ref, "/")
		if len(parts) == 4 {
			p.RunID = parts[2]
		}
		return p
	}
	if r, err := events.DecodeRunRequest(m.Data); err == nil {
		p.RunID, p.SessionID, p.Resume, p.Compact = r.RunID, r.SessionID, r.Resume, r.Compact
	}
	return p
}

// markTaken sets Taken on the requests the default pool's consumer of
// their subject delivered already (the stream keeps a work queue's request
// until it is acknowledged).
func markTaken(ctx context.Context, st jetstream.Stream, list []Pending) {
	delivered := map[string]uint64{} // by consumer name
	for i, p := range list {
		runs, pinned := ConsumerNames(DefaultDurable, p.AgentID, p.Definition)
		name := runs
		if p.Definition != "" {
			name = pinned
		}
		d, ok := delivered[name]
		if !ok {
			if c, err := st.Consumer(ctx, name); err == nil {
				d = c.CachedInfo().Delivered.Stream
			}
			delivered[name] = d
		}
		list[i].Taken = p.Seq <= d
	}
}
