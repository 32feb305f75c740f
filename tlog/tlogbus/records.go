package tlogbus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/tlog"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/mod/sumdb/note"
)

// StoredRecord is one message of the checkpoints stream.
type StoredRecord struct {
	Seq  uint64
	Data []byte
}

// timeout bounds a call made with a ctx that has no deadline.
const timeout = 10 * time.Second

func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}

// checkpointsStream opens the checkpoints stream; the error wraps
// ErrNoCheckpoints when it does not exist.
func checkpointsStream(ctx context.Context, b *bus.Bus) (jetstream.Stream, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	s, err := b.JetStream().Stream(ctx, b.Names().Checkpoints)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: stream %s does not exist (provision it: observer provision)", ErrNoCheckpoints, b.Names().Checkpoints)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: stream %s: %w", bus.ErrConsumer, b.Names().Checkpoints, err)
	}
	return s, nil
}

// ReadRecords returns every message of the checkpoints stream, in stream
// order. The error wraps ErrNoCheckpoints when the stream does not exist,
// bus.ErrConsumer when it cannot be read.
func ReadRecords(ctx context.Context, b *bus.Bus) ([]StoredRecord, error) {
	s, err := checkpointsStream(ctx, b)
	if err != nil {
		return nil, err
	}
	info := s.CachedInfo()
	if info == nil || info.State.Msgs == 0 {
		return nil, nil
	}
	last := info.State.LastSeq
	cctx, cancel := withTimeout(ctx)
	cons, err := s.OrderedConsumer(cctx, jetstream.OrderedConsumerConfig{})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", bus.ErrConsumer, b.Names().Checkpoints, err)
	}
	defer func() {
		if ci := cons.CachedInfo(); ci != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
			_ = b.JetStream().DeleteConsumer(dctx, b.Names().Checkpoints, ci.Name)
			cancel()
		}
	}()
	var out []StoredRecord
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch, err := cons.Fetch(64, jetstream.FetchMaxWait(timeout))
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %w", bus.ErrConsumer, b.Names().Checkpoints, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil {
				return nil, fmt.Errorf("%w: read %s: %w", bus.ErrConsumer, b.Names().Checkpoints, err)
			}
			out = append(out, StoredRecord{Seq: meta.Sequence.Stream, Data: m.Data()})
			if meta.Sequence.Stream >= last || meta.NumPending == 0 {
				return out, nil
			}
		}
		if err := batch.Error(); err != nil {
			return nil, fmt.Errorf("%w: read %s: %w", bus.ErrConsumer, b.Names().Checkpoints, err)
		}
		if n == 0 {
			return out, nil // nothing more within the wait: the stream holds no more
		}
	}
}

// LastRecord returns the checkpoints stream's last message and its
// sequence, or nil when the stream is empty. Errors are ReadRecords'.
func LastRecord(ctx context.Context, b *bus.Bus) (*StoredRecord, error) {
	s, err := checkpointsStream(ctx, b)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	m, err := s.GetLastMsgForSubject(ctx, b.Subjects().Checkpoint())
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: last checkpoint: %w", bus.ErrConsumer, err)
	}
	return &StoredRecord{Seq: m.Sequence, Data: m.Data}, nil
}

// LoadLog reads the stored checkpoints and checks them against each other
// (tlog.NewLog): signed by logKey, cosigned (where they are) by the
// witnesses given. A record that does not read back is a problem of the
// log, not an error. Errors are ReadRecords'.
func LoadLog(ctx context.Context, b *bus.Bus, logKey note.Verifier, witnesses ...note.Verifier) (*tlog.Log, error) {
	recs, err := ReadRecords(ctx, b)
	if err != nil {
		return nil, err
	}
	var (
		stored []*tlog.Stored
		bad    []tlog.Finding
	)
	for _, r := range recs {
		s, err := tlog.ParseRecord(r.Data, logKey, witnesses...)
		if err != nil {
			bad = append(bad, tlog.Finding{Kind: tlog.FindBadCheckpoint, Fails: true,
				Detail: fmt.Sprintf("record %d of %s does not read back: %v", r.Seq, b.Names().Checkpoints, err)})
			continue
		}
		s.Seq = r.Seq
		stored = append(stored, s)
	}
	return tlog.NewLog(stored, bad), nil
}
