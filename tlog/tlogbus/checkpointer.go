package tlogbus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/tlog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"
)

// Defaults of CheckpointerConfig.
const (
	DefaultEvery    = 1000
	DefaultInterval = 10 * time.Second
	DefaultDurable  = "hookbus-checkpointer"
)

// WitnessRef is a witness the checkpointer asks to cosign each checkpoint.
type WitnessRef struct {
	// Name is the witness' subject token: it is called on
	// <prefix>.witness.<name>.add-checkpoint.
	Name string
	// Key verifies its cosignatures (tlog.ParseWitnessVerifier); a
	// cosignature by another key is not kept.
	Key note.Verifier
}

// CheckpointerConfig configures a Checkpointer.
type CheckpointerConfig struct {
	// Signer is the log's key: its name is the checkpoints' origin
	// (required, with its Verifier: tlog.ReadSigner gives both).
	Signer   note.Signer
	Verifier note.Verifier
	// Every is how many messages a checkpoint covers at most beyond the
	// previous one (default 1000, at most tlog.MaxWindow; sequences that
	// hold no message do not count).
	Every int
	// Interval is how long messages read wait for a checkpoint at most
	// (default 10s).
	Interval time.Duration
	// Witnesses cosign each checkpoint before it is stored; one that does
	// not answer within WitnessTimeout (default 5s), or refuses, is logged
	// and the checkpoint stored without its cosignature.
	Witnesses      []WitnessRef
	WitnessTimeout time.Duration
	// Durable names the consumer of the events stream (default
	// "hookbus-checkpointer").
	Durable string
	// State is a file, outside the streams the checkpointer reads and
	// writes, where it saves each checkpoint it stores (a signed note, as
	// tlog.SaveCheckpoint writes it). At start it checks that the
	// checkpoints stream still holds that log: when its checkpoints are
	// gone, or its latest does not extend the saved one, Run refuses to
	// go on (ErrNewLog) unless NewLog is given. Empty: no file, and the
	// checkpointer trusts the checkpoints stream.
	State string
	// NewLog is the operator's reason to start a new log where the
	// checkpoints stream holds no checkpoint although State holds one: the
	// new log's first checkpoint records it (tlog.LogStart).
	NewLog string
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Checkpointer makes the signed checkpoints of the events stream: it reads
// every message, in stream order, through a durable consumer, appends its
// leaf to the tree, and stores a checkpoint (a tlog.Record, with the
// witnesses' cosignatures) in the checkpoints stream every Every messages
// or Interval. Its state is the last checkpoint stored (and, with
// CheckpointerConfig.State, saved in a file of its own, which the stored
// log must extend): a restarted checkpointer goes on from it, and its
// consumer's acknowledged position never passes it, so a crash loses
// nothing. Only one checkpointer writes a log: its stores are fenced on
// the checkpoints stream's last sequence.
type Checkpointer struct {
	b   *bus.Bus
	cfg CheckpointerConfig
	log *slog.Logger

	mu     sync.Mutex // guards what Status reads
	status CheckpointerStatus

	size       uint64         // the last checkpoint's size
	prevRange  []tlog.Hash    // its compact range
	prevLeaf   tlog.Hash      // its last leaf
	rng        *compact.Range // every leaf read
	window     []tlog.Hash    // leaves since the last checkpoint
	counted    int            // messages (not gaps) in window
	gaps       [][2]uint64
	runs       []tlog.RunSpan
	runIndex   map[string]int
	lastTime   time.Time
	opened     time.Time // when window got its first leaf
	lastRecSeq uint64    // the last record's checkpoints stream sequence
	ackable    jetstream.Msg
	witnessAt  map[string]uint64 // the size each witness last cosigned, as far as known
	newLog     *tlog.LogStart    // the decision the next checkpoint records
}

// CheckpointerStatus is what a checkpointer did.
type CheckpointerStatus struct {
	// Size is the size of the last checkpoint stored, Read the stream
	// sequence read up to.
	Size, Read uint64
	// Checkpoints counts the checkpoints stored since it started.
	Checkpoints int
	// Cosigned is, per witness name, the size it last cosigned.
	Cosigned map[string]uint64
}

// NewCheckpointer returns a checkpointer of b's events stream. It does no
// I/O. The error wraps bus.ErrInvalidOption.
func NewCheckpointer(b *bus.Bus, cfg CheckpointerConfig) (*Checkpointer, error) {
	if cfg.Signer == nil || cfg.Verifier == nil || cfg.Signer.Name() != cfg.Verifier.Name() || cfg.Signer.KeyHash() != cfg.Verifier.KeyHash() {
		return nil, fmt.Errorf("%w: a checkpointer needs the log's signer key and its verifier", bus.ErrInvalidOption)
	}
	cfg.Every = cmp.Or(cfg.Every, DefaultEvery)
	cfg.Interval = cmp.Or(cfg.Interval, DefaultInterval)
	cfg.WitnessTimeout = cmp.Or(cfg.WitnessTimeout, 5*time.Second)
	cfg.Durable = cmp.Or(cfg.Durable, DefaultDurable)
	switch {
	case cfg.Every < 1 || cfg.Every > tlog.MaxWindow:
		return nil, fmt.Errorf("%w: every %d (want 1 to %d)", bus.ErrInvalidOption, cfg.Every, tlog.MaxWindow)
	case cfg.Interval < 10*time.Millisecond:
		return nil, fmt.Errorf("%w: interval %v (want >= 10ms)", bus.ErrInvalidOption, cfg.Interval)
	}
	for _, w := range cfg.Witnesses {
		if _, err := b.Subjects().Witness(w.Name, "add-checkpoint"); err != nil || w.Key == nil {
			return nil, fmt.Errorf("%w: witness %q: a subject token and a key", bus.ErrInvalidOption, w.Name)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Checkpointer{b: b, cfg: cfg, log: log, witnessAt: map[string]uint64{}, runIndex: map[string]int{}}, nil
}

// Status returns what the checkpointer did so far.
func (c *Checkpointer) Status() CheckpointerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.status
	s.Cosigned = maps.Clone(c.status.Cosigned)
	return s
}

// Run reads the events stream and stores checkpoints until ctx is done,
// then stores a checkpoint of what it read and returns nil. It returns an
// error wrapping ErrNoCheckpoints when the checkpoints stream does not
// exist, ErrNewLog when it no longer holds the log whose last checkpoint
// State saved, ErrDiverged when the events stream no longer holds what the
// last checkpoint covers (replaced, truncated, rewritten: verify it),
// ErrFenced when another checkpointer stored a checkpoint meanwhile, or
// bus.ErrConsumer when the stream cannot be read.
func (c *Checkpointer) Run(ctx context.Context) error {
	if err := c.load(ctx); err != nil {
		return err
	}
	cons, err := c.consumer(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before reading anything: nothing to store
		}
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(min(2*c.cfg.Every, 1024)))
	if err != nil {
		return fmt.Errorf("%w: checkpointer: %w", bus.ErrConsumer, err)
	}
	defer it.Stop()
	c.log.Info("checkpointer started", "origin", c.cfg.Signer.Name(), "size", c.size, "every", c.cfg.Every, "interval", c.cfg.Interval)
	for {
		wait := c.cfg.Interval
		if len(c.window) > 0 {
			wait = time.Until(c.opened.Add(c.cfg.Interval))
		}
		var (
			m   jetstream.Msg
			err error
		)
		if wait > 0 {
			nctx, cancel := context.WithTimeout(ctx, wait)
			m, err = it.Next(jetstream.NextContext(nctx))
			cancel()
		} else {
			err = context.DeadlineExceeded
		}
		if ctx.Err() != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*c.cfg.WitnessTimeout+timeout)
			defer cancel()
			return c.checkpoint(sctx)
		}
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			if err := c.checkpoint(ctx); err != nil && ctx.Err() == nil {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("%w: checkpointer: %w", bus.ErrConsumer, err)
		}
		if err := c.take(ctx, m); err != nil {
			if ctx.Err() != nil {
				continue // stopped while reading: store what was read
			}
			return err
		}
	}
}

// load takes the state of the last checkpoint stored, once it is known
// to extend the one saved.
func (c *Checkpointer) load(ctx context.Context) error {
	c.rng, _ = tlog.NewRange(0, nil)
	var saved *tlog.Signed
	if c.cfg.State != "" {
		var err error
		if saved, err = tlog.ReadSavedCheckpoint(c.cfg.State, c.cfg.Verifier); err != nil {
			return err
		}
	}
	last, err := LastRecord(ctx, c.b)
	if err != nil {
		return err
	}
	var latest *tlog.Stored
	if last != nil {
		if latest, err = tlog.ParseRecord(last.Data, c.cfg.Verifier); err != nil {
			return fmt.Errorf("the last checkpoint stored (%s %d) is not one of this log (%s): %w", c.b.Names().Checkpoints, last.Seq, c.cfg.Signer.Name(), err)
		}
	}
	if err := c.against(ctx, saved, latest); err != nil {
		return err
	}
	if latest != nil {
		s := latest
		if c.rng, err = tlog.NewRange(s.Size, s.Range); err != nil {
			return err
		}
		c.size, c.prevRange, c.lastRecSeq = s.Size, s.Range, last.Seq
		if n := len(s.Window); n > 0 {
			c.prevLeaf = s.Window[n-1]
		}
		if c.cfg.State != "" && (saved == nil || saved.Size != s.Size) {
			if err := tlog.SaveCheckpoint(c.cfg.State, s.Note); err != nil {
				return fmt.Errorf("save the checkpoint of size %d: %w", s.Size, err)
			}
		}
	}
	st, err := c.b.EventsState(ctx)
	if err != nil {
		return err
	}
	if st.LastSeq < c.size {
		return fmt.Errorf("%w: the events stream ends at seq %d, before the last checkpoint's size %d (replaced or truncated): verify it (observer verify --checkpoint latest)", ErrDiverged, st.LastSeq, c.size)
	}
	if c.size > 0 && c.size >= st.FirstSeq && c.prevLeaf != (tlog.Hash{}) {
		sm, err := c.b.GetStored(ctx, c.size)
		if err != nil {
			return err
		}
		hs := []tlog.Hash{tlog.GapHash(c.size)}
		if sm != nil && sm.Seq == c.size {
			e, _ := EntryOf(sm)
			hs = e.Complete().Hashes(c.size)
		}
		if !slices.Contains(hs, c.prevLeaf) {
			return fmt.Errorf("%w: seq %d of the events stream is not the message the last checkpoint (size %d) covers: verify it (observer verify --checkpoint latest)", ErrDiverged, c.size, c.size)
		}
	}
	c.setStatus(func(s *CheckpointerStatus) { s.Size, s.Read = c.size, c.size })
	return nil
}

// against checks the latest stored checkpoint against the one saved: it
// must be the same or extend it. Where the checkpoints stream holds none,
// a new log starts only by the operator's decision (NewLog), which its
// first checkpoint records.
func (c *Checkpointer) against(ctx context.Context, saved *tlog.Signed, latest *tlog.Stored) error {
	switch {
	case saved == nil && latest == nil:
		if c.cfg.NewLog != "" {
			c.newLog = &tlog.LogStart{Reason: c.cfg.NewLog, Decided: time.Now().UTC()}
		}
		return nil
	case saved == nil:
		if c.cfg.State != "" {
			c.log.Warn("checkpointer: no checkpoint saved in its state file: it takes the checkpoints stream's latest as its log's, unchecked", "state", c.cfg.State, "size", latest.Size)
		}
		return nil
	case latest == nil && c.cfg.NewLog == "":
		return fmt.Errorf("%w: %s holds no checkpoint of %s, but this checkpointer stored the one of size %d (saved in %s): the log it signed is gone (the stream deleted, or replaced): verify the events against the saved checkpoint (observer verify --checkpoint %s); to start a new log over it, give --new-log REASON, which its first checkpoint records",
			ErrNewLog, c.b.Names().Checkpoints, c.cfg.Signer.Name(), saved.Size, c.cfg.State, c.cfg.State)
	case latest == nil:
		c.newLog = &tlog.LogStart{Reason: c.cfg.NewLog, Previous: string(saved.Note), Decided: time.Now().UTC()}
		c.log.Warn("checkpointer: starting a new log over the one it signed, as the operator decided", "previous_size", saved.Size, "previous_root", saved.Root.String(), "reason", c.cfg.NewLog)
		return nil
	}
	if c.cfg.NewLog != "" {
		c.log.Warn("checkpointer: --new-log ignored: the checkpoints stream holds a log, which a new one does not replace", "size", latest.Size)
	}
	if err := c.extends(ctx, saved, latest); err != nil {
		return fmt.Errorf("%w: the latest checkpoint stored in %s (size %d) is not of the log this checkpointer signed: %v (its last checkpoint, of size %d, is saved in %s): verify the events against it (observer verify --checkpoint %s); a new log starts only on an empty %s",
			ErrNewLog, c.b.Names().Checkpoints, latest.Size, err, saved.Size, c.cfg.State, c.cfg.State, c.b.Names().Checkpoints)
	}
	return nil
}

// extends checks that latest is saved or extends it: the same root at the
// same size, or a consistency proof made from the stored checkpoints'
// leaves.
func (c *Checkpointer) extends(ctx context.Context, saved *tlog.Signed, latest *tlog.Stored) error {
	switch {
	case latest.Size == saved.Size && latest.Root == saved.Root:
		return nil
	case latest.Size == saved.Size:
		return fmt.Errorf("another root at the same size (%s, saved %s)", latest.Root, saved.Root)
	case latest.Size < saved.Size:
		return fmt.Errorf("it is smaller than the saved one (%d): the log was rolled back", saved.Size)
	}
	l, err := LoadLog(ctx, c.b, c.cfg.Verifier)
	if err != nil {
		return err
	}
	top := l.Latest()
	if l.Tree == nil || top == nil || top.Root != latest.Root || saved.Size < l.Tree.Begin() || top.Size > l.Tree.Size() {
		return fmt.Errorf("the stored checkpoints do not hold the leaves that prove it extends the saved one")
	}
	path, err := l.Tree.ConsistencyProof(saved.Size, top.Size)
	if err == nil {
		err = tlog.VerifyConsistency(saved.Size, top.Size, path, saved.Root, top.Root)
	}
	return err
}

// consumer opens the checkpointer's durable consumer, creating it at the
// message after the last checkpoint when it does not exist. Its position
// is only a hint: the checkpointer reads what it needs by sequence.
func (c *Checkpointer) consumer(ctx context.Context) (jetstream.Consumer, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	js, stream := c.b.JetStream(), c.b.Names().Events
	cons, err := js.Consumer(ctx, stream, c.cfg.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cfg := jetstream.ConsumerConfig{
			Durable:       c.cfg.Durable,
			Description:   "hookbus checkpointer (" + c.cfg.Signer.Name() + ")",
			AckPolicy:     jetstream.AckAllPolicy,
			AckWait:       max(2*c.cfg.Interval, 30*time.Second),
			MaxAckPending: max(2*c.cfg.Every, 1024),
			MaxDeliver:    -1,
		}
		if c.size > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, c.size+1
		}
		cons, err = js.CreateConsumer(ctx, stream, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: checkpointer consumer %s: %w", bus.ErrConsumer, c.cfg.Durable, err)
	}
	return cons, nil
}

// take appends the message delivered (and any sequence before it not yet
// read), and stores a checkpoint when the window is full.
func (c *Checkpointer) take(ctx context.Context, m jetstream.Msg) error {
	meta, err := m.Metadata()
	if err != nil {
		return fmt.Errorf("%w: checkpointer: %w", bus.ErrConsumer, err)
	}
	seq := meta.Sequence.Stream
	next := c.rng.End() + 1
	if seq < next {
		c.ackable = m // read already (a redelivery)
		return nil
	}
	if seq > next {
		if err := c.fill(ctx, next, seq-1); err != nil {
			return err
		}
	}
	sm := &bus.StoredMessage{Seq: seq, Time: meta.Timestamp, Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
	if err := c.b.DecodeStored(ctx, sm); err != nil {
		return err
	}
	c.leaf(sm)
	c.ackable = m
	return c.full(ctx)
}

// fill reads the sequences from to to by sequence: messages the consumer
// has not delivered yet (redelivered later) or that are gone (gaps).
func (c *Checkpointer) fill(ctx context.Context, from, to uint64) error {
	for s := from; s <= to; {
		sm, err := c.b.GetStored(ctx, s)
		if err != nil {
			return err
		}
		if sm == nil || sm.Seq > to {
			c.gap(s, to)
			return nil
		}
		if sm.Seq > s {
			c.gap(s, sm.Seq-1)
		}
		c.leaf(sm)
		if err := c.full(ctx); err != nil {
			return err
		}
		s = sm.Seq + 1
	}
	return nil
}

// gap appends the leaves of sequences from to to, which hold no message.
func (c *Checkpointer) gap(from, to uint64) {
	for s := from; s <= to; s++ {
		c.append(tlog.GapHash(s))
	}
	if n := len(c.gaps); n > 0 && c.gaps[n-1][1]+1 == from {
		c.gaps[n-1][1] = to
	} else {
		c.gaps = append(c.gaps, [2]uint64{from, to})
	}
}

// leaf appends a message's leaf.
func (c *Checkpointer) leaf(sm *bus.StoredMessage) {
	e, _ := EntryOf(sm)
	c.append(tlog.HashLeaf(e.Leaf(sm.Seq, 0)))
	c.counted++
	c.lastTime = sm.Time
	if ev := sm.Event; ev != nil && ev.RunID != "" {
		if i, ok := c.runIndex[ev.RunID]; ok {
			c.runs[i].Last, c.runs[i].Events = sm.Seq, c.runs[i].Events+1
		} else {
			c.runIndex[ev.RunID] = len(c.runs)
			c.runs = append(c.runs, tlog.RunSpan{Run: ev.RunID, Agent: ev.AgentID, Session: ev.SessionID, First: sm.Seq, Last: sm.Seq, Events: 1})
		}
	}
}

// full stores a checkpoint when the window holds Every messages.
func (c *Checkpointer) full(ctx context.Context) error {
	if c.counted >= c.cfg.Every {
		return c.checkpoint(ctx)
	}
	return nil
}

func (c *Checkpointer) append(h tlog.Hash) {
	if len(c.window) == 0 {
		c.opened = time.Now()
	}
	if err := c.rng.Append(h[:], nil); err != nil {
		panic(err)
	}
	c.window = append(c.window, h)
	c.setStatus(func(s *CheckpointerStatus) { s.Read = c.rng.End() })
}

// checkpoint signs, cosigns and stores a checkpoint of every leaf read,
// when there is any since the last one. A store that fails is tried again
// (the consumer's position stays at the last checkpoint) until ctx is
// done.
func (c *Checkpointer) checkpoint(ctx context.Context) error {
	size := c.rng.End()
	if size == c.size {
		c.opened = time.Now() // nothing new: wait a whole interval again
		return nil
	}
	cp := tlog.Checkpoint{Origin: c.cfg.Signer.Name(), Size: size, Root: tlog.RootOf(c.rng)}
	signed, err := cp.Sign(c.cfg.Signer)
	if err != nil {
		return err
	}
	signed = c.cosign(ctx, cp, signed)
	rec := tlog.NewRecord(signed, c.size, rangeHashes(c.rng), c.window, c.gaps, c.runs, c.lastTime)
	if c.size == 0 {
		rec.NewLog = c.newLog
	}
	data, err := rec.Marshal()
	if err != nil {
		return err
	}
	seq, err := c.store(ctx, cp, data)
	if err != nil {
		return err
	}
	c.log.Info("checkpoint stored", "size", size, "root", cp.Root.String(), "messages", c.counted, "record", seq)
	c.newLog = nil
	if c.cfg.State != "" {
		if err := tlog.SaveCheckpoint(c.cfg.State, signed); err != nil {
			return fmt.Errorf("the checkpoint of size %d is stored, but not saved in %s: %w", size, c.cfg.State, err)
		}
	}
	c.lastRecSeq, c.size, c.prevRange, c.prevLeaf = seq, size, rangeHashes(c.rng), c.window[len(c.window)-1]
	c.window, c.counted, c.gaps, c.runs, c.runIndex = nil, 0, nil, nil, map[string]int{}
	if c.ackable != nil {
		if err := c.ackable.Ack(); err != nil {
			c.log.Warn("checkpointer: ack failed (the messages come again, and are skipped)", "error", err)
		}
		c.ackable = nil
	}
	c.setStatus(func(s *CheckpointerStatus) { s.Size = size; s.Checkpoints++ })
	return nil
}

// store publishes a record, fenced on the last record, until it is stored
// or ctx is done.
func (c *Checkpointer) store(ctx context.Context, cp tlog.Checkpoint, data []byte) (uint64, error) {
	msg := &nats.Msg{Subject: c.b.Subjects().Checkpoint(), Data: data}
	id := cp.Origin + "/" + strconv.FormatUint(cp.Size, 10)
	for delay := 250 * time.Millisecond; ; delay = min(2*delay, 30*time.Second) {
		// An attempt runs to its end even when ctx is done meanwhile (a
		// checkpointer stopped while it stores): ctx ends the retries.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		ack, err := c.b.JetStream().PublishMsg(pctx, msg, jetstream.WithMsgID(id), jetstream.WithExpectLastSequence(c.lastRecSeq))
		cancel()
		if err == nil {
			return ack.Sequence, nil
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			return 0, fmt.Errorf("%w: a checkpoint was stored in %s after the one of size %d this checkpointer knows: another checkpointer writes this log", ErrFenced, c.b.Names().Checkpoints, c.size)
		}
		if c.b.Conn().IsClosed() {
			return 0, fmt.Errorf("%w: checkpoint of size %d not stored: %w", bus.ErrConsumer, cp.Size, err)
		}
		c.log.Warn("checkpointer: storing the checkpoint failed; trying again", "size", cp.Size, "error", err, "in", delay)
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("checkpoint of size %d not stored: %w", cp.Size, err)
		case <-time.After(delay):
		}
	}
}

func (c *Checkpointer) setStatus(f func(*CheckpointerStatus)) {
	c.mu.Lock()
	f(&c.status)
	c.mu.Unlock()
}

func rangeHashes(r *compact.Range) []tlog.Hash {
	out := make([]tlog.Hash, len(r.Hashes()))
	for i, h := range r.Hashes() {
		copy(out[i][:], h)
	}
	return out
}
