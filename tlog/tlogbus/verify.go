package tlogbus

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/tlog"
	"golang.org/x/mod/sumdb/note"
)

// VerifyConfig configures VerifyStream and Prove.
type VerifyConfig struct {
	// LogKey is the log's verifier key (required).
	LogKey note.Verifier
	// Witnesses are the witnesses whose cosignatures the checkpoint proven
	// must carry.
	Witnesses []note.Verifier
	// Checkpoint is the signed checkpoint to prove against; nil takes the
	// latest stored one that carries the witnesses' cosignatures (the
	// latest stored when none does: it then fails as unwitnessed).
	Checkpoint []byte
	// Progress, when set, is called with each message's stream sequence.
	Progress func(seq uint64)
}

// target opens the checkpoint to prove: the one given, or the latest
// stored one the witnesses cosigned.
func (cfg VerifyConfig) target(l *tlog.Log) (*tlog.Signed, []tlog.Finding, error) {
	if cfg.LogKey == nil {
		return nil, nil, fmt.Errorf("%w: the log's key is required", bus.ErrInvalidOption)
	}
	var target *tlog.Signed
	if cfg.Checkpoint != nil {
		s, err := tlog.OpenCheckpoint(cfg.Checkpoint, cfg.LogKey, cfg.Witnesses...)
		if err != nil {
			return nil, nil, fmt.Errorf("the checkpoint given: %w", err)
		}
		target = s
	} else {
		for i := len(l.Checkpoints) - 1; i >= 0 && target == nil; i-- {
			if l.Checkpoints[i].RequireCosigned(cfg.Witnesses...) == nil {
				target = l.Checkpoints[i].Signed
			}
		}
		if target == nil && l.Latest() != nil {
			target = l.Latest().Signed
		}
	}
	if target == nil {
		return nil, nil, fmt.Errorf("%w: the checkpoints stream holds no checkpoint of %s", ErrNoCheckpoints, cfg.LogKey.Name())
	}
	var notes []tlog.Finding
	if err := target.RequireCosigned(cfg.Witnesses...); err != nil {
		notes = append(notes, tlog.Finding{Kind: tlog.FindUnwitnessed, Detail: strings.TrimPrefix(err.Error(), tlog.ErrSignature.Error()+": ")})
	}
	return target, notes, nil
}

// VerifyStream proves the events stream as read against a checkpoint and
// every stored one (tlog.Verification): it reads the stored checkpoints,
// then every message of the stream from the first the stored compact
// ranges do not stand for. It returns an error (not a verdict) only when
// it cannot verify: a checkpoint given that does not open with the keys,
// no checkpoint to prove against (ErrNoCheckpoints), a stream that cannot
// be read (bus.ErrConsumer).
func VerifyStream(ctx context.Context, b *bus.Bus, cfg VerifyConfig) (*tlog.StreamVerdict, error) {
	l, err := LoadLog(ctx, b, cfg.LogKey, cfg.Witnesses...)
	if err != nil {
		return nil, err
	}
	target, notes, err := cfg.target(l)
	if err != nil {
		return nil, err
	}
	trusts := cfg.Checkpoint == nil && len(cfg.Witnesses) == 0
	if trusts {
		notes = append(notes, tlog.Finding{Kind: tlog.FindTrustsServer,
			Detail: "no witness and no checkpoint kept elsewhere: this proves the stream is the log the server's checkpoints stream holds now, which whoever runs the server could have replaced with the stream (a new log signed over the old one); give --witness-key, or --checkpoint FILE, a checkpoint kept outside the server (the checkpointer's --state file, a witness' state, an earlier observer checkpoint --note)"})
	}
	notes = append(notes, newLogs(l)...)
	st, err := b.EventsState(ctx)
	if err != nil {
		return nil, err
	}
	largest := st.MaxMsgSize
	if largest <= 0 {
		largest = b.Conn().MaxPayload()
	}
	largest += 4096 // its subject and the server's framing
	v, err := tlog.NewVerification(l, target, tlog.StreamState{
		FirstSeq: st.FirstSeq, LastSeq: st.LastSeq, Bytes: st.Bytes, Now: st.Now,
		MaxAge: st.MaxAge, MaxMsgs: st.MaxMsgs, MaxBytes: st.MaxBytes, MaxMsgSize: largest, DiscardNew: st.DiscardNew,
	}, len(cfg.Witnesses) > 0, notes...)
	if err != nil {
		return nil, err
	}
	err = b.ReadStream(ctx, v.Start(), func(m *bus.StoredMessage) error {
		e, unknown := EntryOf(m)
		v.Add(m.Seq, e, unknown)
		if cfg.Progress != nil {
			cfg.Progress(m.Seq)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sv := v.Finish()
	sv.TrustsServer = trusts
	return sv, nil
}

// newLogs notes the stored checkpoints that start a new log over a
// previous one.
func newLogs(l *tlog.Log) []tlog.Finding {
	var out []tlog.Finding
	for _, s := range l.Checkpoints {
		d := s.Record.NewLog
		if d == nil {
			continue
		}
		prev := "none saved"
		if cp, _, err := tlog.PeekCheckpoint([]byte(d.Previous)); err == nil {
			prev = fmt.Sprintf("the last it had signed is of size %d, root %s", cp.Size, cp.Root)
		}
		out = append(out, tlog.Finding{Kind: tlog.FindNewLog,
			Detail: fmt.Sprintf("the checkpoint of size %d starts a new log over a previous one (%s), by the operator's decision of %s: %q; prove the previous log's events against its own checkpoints", s.Size, prev, d.Decided.Format(time.RFC3339), d.Reason)})
	}
	return out
}

// Prove writes the proof that run's events are in the log under the
// checkpoint (VerifyConfig.Checkpoint, or the latest stored one the
// witnesses cosigned): each event's leaf, recomputed from the stream and
// checked against the stored leaf at its sequence, with its inclusion
// proof from the stored checkpoints' leaves. later counts the run's events
// newer than the checkpoint (not in the proof). It returns an error
// wrapping ErrDiverged when an event is not the one checkpointed, or
// ErrNoCheckpoints when no event of the run is covered.
func Prove(ctx context.Context, b *bus.Bus, run string, cfg VerifyConfig) (p *tlog.Proof, later int, err error) {
	l, err := LoadLog(ctx, b, cfg.LogKey, cfg.Witnesses...)
	if err != nil {
		return nil, 0, err
	}
	target, _, err := cfg.target(l)
	if err != nil {
		return nil, 0, err
	}
	if l.Tree == nil || target.Size < l.Tree.Begin() || target.Size > l.Tree.Size() {
		return nil, 0, fmt.Errorf("%w: the stored checkpoints do not reach the checkpoint of size %d", ErrNoCheckpoints, target.Size)
	}
	var seqs []uint64
	if _, err := b.Replay(ctx, bus.Filter{Run: run}, func(e *events.Event) error {
		seqs = append(seqs, e.Stored)
		return nil
	}); err != nil {
		return nil, 0, err
	}
	leaves := map[uint64][]byte{}
	for _, seq := range seqs {
		if seq > target.Size {
			later++
			continue
		}
		want, ok := l.Tree.Leaf(seq - 1)
		if !ok {
			return nil, 0, fmt.Errorf("%w: the leaf of seq %d is not stored (before the first stored checkpoint's window)", ErrNoCheckpoints, seq)
		}
		m, err := b.GetStored(ctx, seq)
		if err != nil {
			return nil, 0, err
		}
		if m == nil || m.Seq != seq {
			return nil, 0, fmt.Errorf("%w: seq %d is gone", ErrDiverged, seq)
		}
		e, _ := EntryOf(m)
		e = e.Complete()
		i := slices.Index(e.Hashes(seq), want)
		if i < 0 {
			return nil, 0, fmt.Errorf("%w: the event at seq %d (%s) is not the message checkpointed there", ErrDiverged, seq, m.Event.Stage)
		}
		leaves[seq-1] = e.Leaf(seq, i)
	}
	if len(leaves) == 0 {
		return nil, later, fmt.Errorf("%w: no event of run %s is covered by the checkpoint of size %d (%d are newer)", ErrNoCheckpoints, run, target.Size, later)
	}
	p, err = tlog.NewProof(target, run, l.Tree, leaves)
	return p, later, err
}
