package tlog

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/transparency-dev/merkle/compact"
)

// StreamState is the events stream's extent and retention limits: what
// tells messages JetStream expired from messages removed.
type StreamState struct {
	FirstSeq, LastSeq uint64
	// Bytes is the size of the messages the stream holds, as the server
	// counts it.
	Bytes uint64
	// Now is the server's time (stored times are the server's).
	Now               time.Time
	MaxAge            time.Duration
	MaxMsgs, MaxBytes int64
	// MaxMsgSize bounds one stored message's size, as the server counts
	// it (0: DefaultMaxMsgSize).
	MaxMsgSize int64
	// DiscardNew is set when the stream refuses new messages at its count
	// and size limits instead of removing the oldest: then only MaxAge
	// removes messages.
	DiscardNew bool
}

// DefaultMaxMsgSize bounds one stored message's size when StreamState
// does not: NATS' default max_payload (1 MiB) and room for its subject
// and the server's framing.
const DefaultMaxMsgSize = 1<<20 + 4096

// StreamVerdict is the verification of the events stream against a
// checkpoint and the stored ones.
type StreamVerdict struct {
	// Checkpoint is the checkpoint proven (a file given, or the latest
	// stored), with the witnesses' cosignatures that verified.
	Checkpoint Checkpoint    `json:"checkpoint"`
	Cosigned   []Cosignature `json:"cosigned,omitempty"`
	// Stored is how many checkpoints the checkpoints stream holds.
	Stored int `json:"stored_checkpoints"`
	// Messages is how many messages of the stream were read; Compared
	// how many of them were compared with the leaf checkpointed at their
	// sequence.
	Messages int `json:"messages"`
	Compared int `json:"compared"`
	// Begin is the first stream sequence recomputed from the stream, minus
	// one: the tree's first Begin leaves come from a stored compact range
	// (their messages expired).
	Begin uint64 `json:"begin"`
	// Proven is set when the stream as read produces the checkpoint's root;
	// ProvenStored counts the stored checkpoints whose roots it produces.
	Proven       bool      `json:"proven"`
	ProvenStored int       `json:"proven_stored"`
	Findings     []Finding `json:"findings,omitempty"`
	// Intact is set when no finding fails the verification.
	Intact bool `json:"intact"`
	// TrustsServer is set when the checkpoint proven is only the latest
	// the server holds: no witness' cosignature required, no checkpoint
	// kept elsewhere given (a FindTrustsServer note says so too).
	TrustsServer bool `json:"trusts_server"`
}

// OK reports whether no finding fails the verification.
func (v *StreamVerdict) OK() bool {
	return !slices.ContainsFunc(v.Findings, func(f Finding) bool { return f.Fails })
}

// Has reports whether the verdict has a finding of kind.
func (v *StreamVerdict) Has(kind string) bool {
	return slices.ContainsFunc(v.Findings, func(f Finding) bool { return f.Kind == kind })
}

// Verification checks the events stream against a log's checkpoints:
// feed it every message of the stream from Start on, in stream order
// (Add), then Finish. It recomputes the tree from the stream (from the
// stored compact range where the oldest messages expired), checks that it
// produces the root of the checkpoint proven and of every stored one, and
// compares each message with the leaf checkpointed at its sequence, which
// names what was removed, altered, inserted, truncated or replaced.
type Verification struct {
	log       *Log
	target    *Signed
	state     StreamState
	witnessed bool
	verdict   StreamVerdict

	begin       uint64
	rng         *compact.Range
	next        uint64 // the next stream sequence to account for
	checks      []*Signed
	ci          int
	rootsFailed []uint64
	lastMatched bool
	shift       uint64
	matched     int
	lastPresent uint64

	missing, altered, inserted, renumbered, unverifiable, shifted ranges
	unchecked, early, expired                                     ranges

	headFirst uint64 // the stream's first sequence, when messages the tree holds are gone before it
	past      uint64 // messages read past the stored leaves
}

// NewVerification starts verifying the stream described by state against
// target (nil: the log's latest checkpoint), given the log's stored
// checkpoints. notes are findings the caller made (a witness' cosignature
// missing); witnessed makes an unwitnessed finding fail. It returns an
// error wrapping ErrNotHeld when there is nothing to prove against, or
// when the stream's oldest messages are gone and no stored checkpoint
// holds the compact range that replaces them.
func NewVerification(l *Log, target *Signed, state StreamState, witnessed bool, notes ...Finding) (*Verification, error) {
	if target == nil {
		if l.Latest() == nil {
			return nil, fmt.Errorf("%w: no checkpoint is stored", ErrNotHeld)
		}
		target = l.Latest().Signed
	}
	v := &Verification{log: l, target: target, state: state, witnessed: witnessed, lastMatched: true}
	v.verdict = StreamVerdict{Checkpoint: target.Checkpoint, Cosigned: target.Cosigned, Stored: len(l.Checkpoints)}
	v.verdict.Findings = slices.Concat(l.Problems, notes)
	for _, s := range l.Checkpoints {
		v.checks = append(v.checks, s.Signed)
	}
	if latest := l.Latest(); latest == nil || target.Size > latest.Size {
		if latest != nil {
			v.note(FindMissingCheckpoint, seqRange{latest.Size + 1, target.Size},
				"the checkpoint given (size %d) is newer than every stored one (the latest is of size %d): the checkpoints stream lost its latest records", target.Size, latest.Size)
		}
		v.checks = append(v.checks, target)
	} else if s := l.At(target.Size); s == nil || s.Root != target.Root {
		v.checks = append(v.checks, target)
		if s != nil {
			v.note(FindInconsistent, seqRange{},
				"the checkpoint given and the stored one of size %d have different roots (%s, %s): the log signed two histories", target.Size, target.Root, s.Root)
		} else if l.Tree != nil && target.Size >= l.Tree.Begin() {
			v.consistent(target)
		}
	}
	slices.SortStableFunc(v.checks, func(a, b *Signed) int { return cmp.Compare(a.Size, b.Size) })

	first := state.FirstSeq
	if first == 0 {
		first = state.LastSeq + 1
	}
	t := l.Tree
	switch {
	case first <= 1:
		v.rng = rangeFactory.NewEmptyRange(0)
	case t == nil:
		return nil, fmt.Errorf("%w: the stream's first %d messages are gone and no stored checkpoint holds their compact range", ErrNotHeld, first-1)
	default:
		v.begin = min(max(first-1, t.Begin()), t.Size())
		hs, err := t.Range(v.begin)
		if err != nil {
			return nil, err
		}
		if v.rng, err = NewRange(v.begin, hs); err != nil {
			return nil, err
		}
		v.headFirst = first // accounted for by Finish, once the messages after it are counted
	}
	v.verdict.Begin = v.begin
	v.next = v.begin + 1
	v.checkRoots()
	return v, nil
}

// Start is the first stream sequence to Add: the ones before it are known
// by a stored compact range.
func (v *Verification) Start() uint64 { return v.begin + 1 }

// consistent checks that target, a checkpoint given but not stored, is
// consistent with the latest stored one, by a proof made from the stored
// leaves.
func (v *Verification) consistent(target *Signed) {
	latest := v.log.Latest()
	path, err := v.log.Tree.ConsistencyProof(target.Size, latest.Size)
	if err == nil {
		err = VerifyConsistency(target.Size, latest.Size, path, target.Root, latest.Root)
	}
	if err != nil {
		v.note(FindInconsistent, seqRange{}, "the latest stored checkpoint (size %d) does not extend the one given (size %d): %v", latest.Size, target.Size, err)
	}
}

// head accounts for the stream's oldest messages that the tree holds and
// that are gone before first: expired when the stream's limits could have
// removed them, removed otherwise. It returns the ranges of each, in
// order.
func (v *Verification) head(first uint64) (expired, removed ranges) {
	t := v.log.Tree
	lo, hi := t.Begin()+1, min(first-1, t.Size())
	if lo > hi {
		return nil, nil
	}
	// after counts the messages stored after seq: those the tree holds,
	// and those read past it.
	after := v.past
	if v.state.MaxMsgs > 0 {
		for seq := hi + 1; seq <= t.Size(); seq++ {
			if ck, _ := t.Leaf(seq - 1); ck != GapHash(seq) {
				after++
			}
		}
	}
	largest := uint64(v.state.MaxMsgSize)
	if largest == 0 {
		largest = DefaultMaxMsgSize
	}
	// bytes bounds the size of the messages stored after seq: those the
	// stream holds, and each gone one as large as a message may be.
	bytes := v.state.Bytes
	gone := make([]bool, hi-lo+1) // by seq-lo: true when expirable
	msg := make([]bool, hi-lo+1)
	for seq := hi; seq >= lo; seq-- {
		ck, _ := t.Leaf(seq - 1)
		if ck == GapHash(seq) {
			continue
		}
		msg[seq-lo], gone[seq-lo] = true, v.expirable(seq, after, bytes+largest)
		after++
		bytes += largest
	}
	for i := range gone {
		switch {
		case !msg[i]:
		case gone[i]:
			expired.add(lo + uint64(i))
		default:
			removed.add(lo + uint64(i))
		}
	}
	return expired, removed
}

// expirable reports whether JetStream's limits could have removed the
// message at seq, after which the stream stored after messages, and which
// with them is at most bytes large: a count limit when at least that many
// messages came after it; a size limit when they could be more than it;
// an age limit when the window before the message's ended longer ago than
// it, by the server's clock.
func (v *Verification) expirable(seq, after, bytes uint64) bool {
	st := v.state
	if !st.DiscardNew {
		if st.MaxMsgs > 0 && after >= uint64(st.MaxMsgs) {
			return true
		}
		if st.MaxBytes > 0 && bytes > uint64(st.MaxBytes) {
			return true
		}
	}
	if st.MaxAge <= 0 {
		return false
	}
	prev := v.log.prevTime(seq)
	return !prev.After(st.Now.Add(-st.MaxAge))
}

// Add accounts for the message stored at seq (in stream order, from Start
// on; earlier ones are ignored). unknown is set when its leaf cannot be
// recomputed (its data is gone and nothing else names its hash): its
// checkpointed leaf is then taken as it is.
func (v *Verification) Add(seq uint64, e Entry, unknown bool) {
	if seq <= v.begin {
		v.early.add(seq) // before the first leaf stored
		return
	}
	for s := v.next; s < seq; s++ {
		v.absent(s)
	}
	v.next = seq + 1
	v.verdict.Messages++
	v.lastPresent = seq
	idx := seq - 1
	t := v.log.Tree
	ck, have := Hash{}, false
	if t != nil {
		ck, have = t.Leaf(idx)
	}
	hs := e.Hashes(seq)
	chosen := hs[0]
	if have && ck != chosen {
		e = e.Complete()
		hs = e.Hashes(seq)
	}
	if t != nil && idx >= t.Size() {
		v.past++
	}
	switch {
	case !have && t != nil && idx >= t.Size():
		v.unchecked.add(seq)
	case !have:
		v.early.add(seq) // before the first checkpoint whose leaves are stored
	case slices.Contains(hs, ck):
		v.verdict.Compared++
		chosen = ck
		v.matched++
		v.lastMatched = true
	case unknown:
		chosen = ck
		v.unverifiable.add(seq)
	default:
		v.verdict.Compared++
		v.differs(seq, e, ck)
		v.lastMatched = false
	}
	v.append(chosen)
}

// differs accounts for a message that is not the one checkpointed at its
// sequence: inserted where there was none, the checkpointed message of a
// later sequence (a copy of the stream without the ones between), or
// altered.
func (v *Verification) differs(seq uint64, e Entry, ck Hash) {
	t := v.log.Tree
	at := func(d uint64) bool {
		other, ok := t.Leaf(seq - 1 + d)
		return ok && slices.Contains(e.Hashes(seq+d), other)
	}
	switch {
	case ck == GapHash(seq):
		v.inserted.add(seq)
	case v.shift > 0 && at(v.shift):
		v.renumbered.add(seq)
	case v.lastMatched:
		const maxShift = 1 << 16
		for d := v.shift + 1; d <= maxShift && seq-1+d < t.Size(); d++ {
			if at(d) {
				for s := seq + v.shift; s < seq+d; s++ {
					v.shifted.add(s)
				}
				v.shift = d
				v.renumbered.add(seq)
				return
			}
		}
		v.altered.add(seq)
	default:
		v.altered.add(seq)
	}
}

// absent accounts for a sequence that holds no message.
func (v *Verification) absent(seq uint64) {
	t := v.log.Tree
	gap := GapHash(seq)
	if t != nil {
		if ck, ok := t.Leaf(seq - 1); ok && ck != gap {
			v.missing.add(seq)
		}
	}
	v.append(gap)
}

func (v *Verification) append(h Hash) {
	if err := v.rng.Append(h[:], nil); err != nil {
		panic(err)
	}
	v.checkRoots()
}

// checkRoots compares the recomputed root with each checkpoint's of the
// current size.
func (v *Verification) checkRoots() {
	size := v.rng.End()
	for v.ci < len(v.checks) && v.checks[v.ci].Size <= size {
		c := v.checks[v.ci]
		v.ci++
		if c.Size < size {
			continue // before the tree was recomputed from
		}
		if RootOf(v.rng) != c.Root {
			v.rootsFailed = append(v.rootsFailed, c.Size)
			continue
		}
		if c == v.target || c.Size == v.target.Size && c.Root == v.target.Root {
			v.verdict.Proven = true
		}
		if v.log.At(c.Size) != nil {
			v.verdict.ProvenStored++
		}
	}
}

// Finish accounts for the sequences the checkpoints cover past the
// stream's last message, and returns the verdict.
func (v *Verification) Finish() *StreamVerdict {
	end, reach := v.target.Size, v.state.LastSeq
	if t := v.log.Tree; t != nil {
		end, reach = max(end, t.Size()), max(reach, t.Size())
	}
	// Past both the stream and the stored leaves nothing is compared and
	// no root can be produced: a checkpoint that far is truncated at once,
	// however large its size.
	for s := v.next; s <= min(end, reach); s++ {
		v.absent(s)
	}
	if end > reach {
		v.missing = append(v.missing, seqRange{max(v.next, reach+1), end})
	}
	v.next = max(v.next, end+1)
	if v.headFirst > 0 {
		expired, removed := v.head(v.headFirst)
		v.expired = expired
		v.missing = append(removed, v.missing...)
	}
	f := &v.verdict
	for _, r := range v.expired {
		v.note(FindExpired, r, "%d checkpointed messages are gone from the stream's start, as its retention limits%s remove them; the stored checkpoints stand for them", r.count(), v.limits())
	}
	for _, r := range v.early {
		v.note(FindUnchecked, r, "%d messages not compared one by one: no stored checkpoint holds their leaves", r.count())
	}
	// In a renumbered copy the checkpointed messages past its end are the
	// ones its last messages were renumbered from.
	v.missing = v.missing.without(v.lastPresent+1, v.lastPresent+v.shift)
	for _, r := range v.missing {
		switch {
		case r.last < v.state.FirstSeq:
			v.note(FindRemoved, r, "%d checkpointed messages are gone from the stream's start%s, which its retention limits%s do not explain: too few messages came after them, or too recently", r.count(), v.runs(r), v.limits())
		case r.first > v.lastPresent:
			v.note(FindTruncated, r, "the stream ends before its last %d checkpointed messages%s", r.count(), v.runs(r))
		default:
			v.note(FindRemoved, r, "%d checkpointed messages are no longer in the stream%s", r.count(), v.runs(r))
		}
	}
	for _, r := range v.shifted {
		v.note(FindRemoved, r, "%d checkpointed messages are not in this stream%s: the messages after them are here, renumbered (%d of them): a copy of the stream made without them", r.count(), v.runs(r), v.renumbered.total())
	}
	if v.matched == 0 && len(v.altered)+len(v.inserted)+len(v.renumbered) > 0 {
		all := slices.Concat(v.altered, v.inserted, v.renumbered)
		first, last := all[0].first, all[0].last
		for _, r := range all {
			first, last = min(first, r.first), max(last, r.last)
		}
		v.note(FindReplaced, seqRange{first, last}, "none of the %d messages compared is the one checkpointed at its sequence: this is another stream", f.Compared)
	} else {
		for _, r := range v.altered {
			v.note(FindAltered, r, "%d messages are not the ones checkpointed at their sequences%s", r.count(), v.runs(r))
		}
		for _, r := range v.inserted {
			v.note(FindInserted, r, "%d messages stand where the checkpoint recorded that none was", r.count())
		}
	}
	for _, r := range v.unverifiable {
		v.note(FindUnverifiable, r, "%d claim-checked events whose data is gone and whose reference names no hash: their checkpointed leaves are taken as they are", r.count())
	}
	for _, r := range v.unchecked {
		v.note(FindUnchecked, r, "%d messages are newer than the latest checkpoint", r.count())
	}
	explained := slices.ContainsFunc(f.Findings, func(x Finding) bool { return fails(x.Kind, v.witnessed) })
	if len(v.rootsFailed) > 0 && !explained {
		sizes := make([]string, len(v.rootsFailed))
		for i, s := range v.rootsFailed {
			sizes[i] = fmt.Sprint(s)
		}
		v.note(FindNotProven, seqRange{}, "the stream as read does not produce the roots of the checkpoints of size %s", strings.Join(sizes, ", "))
	}
	if !f.Proven && v.target.Size < v.begin {
		v.note(FindExpired, seqRange{}, "every message the checkpoint of size %d covers expired: it is proven through the stored checkpoints that extend it", v.target.Size)
	} else if !f.Proven && !slices.Contains(v.rootsFailed, v.target.Size) {
		v.note(FindNotProven, seqRange{}, "the checkpoint of size %d was not reached", v.target.Size)
	}
	for i := range f.Findings {
		f.Findings[i].Fails = fails(f.Findings[i].Kind, v.witnessed)
	}
	slices.SortStableFunc(f.Findings, func(a, b Finding) int { return cmp.Compare(a.First, b.First) })
	f.Intact = f.OK()
	return f
}

// note adds a finding of kind over the sequences r (the zero seqRange:
// none) to the verdict.
func (v *Verification) note(kind string, r seqRange, format string, args ...any) {
	v.verdict.Findings = append(v.verdict.Findings, Finding{Kind: kind, First: r.first, Last: r.last, Detail: fmt.Sprintf(format, args...)})
}

// runs names the runs the records index between r's sequences.
func (v *Verification) runs(r seqRange) string {
	spans := v.log.RunsIn(r.first, r.last)
	if len(spans) == 0 {
		return ""
	}
	var names []string
	seen := map[string]bool{}
	for _, s := range spans {
		if !seen[s.Run] {
			seen[s.Run] = true
			names = append(names, fmt.Sprintf("run %s (%s/%s)", s.Run, s.Agent, s.Session))
		}
	}
	const most = 3
	if len(names) > most {
		names = append(names[:most], fmt.Sprintf("%d more", len(names)-most))
	}
	return ", of " + strings.Join(names, ", ")
}

// limits describes the stream's retention limits.
func (v *Verification) limits() string {
	st := v.state
	var l []string
	if st.MaxAge > 0 {
		l = append(l, "max age "+st.MaxAge.String())
	}
	if st.MaxMsgs > 0 {
		l = append(l, fmt.Sprintf("max %d messages", st.MaxMsgs))
	}
	if st.MaxBytes > 0 {
		l = append(l, fmt.Sprintf("max %d bytes", st.MaxBytes))
	}
	if len(l) > 0 && st.DiscardNew && (st.MaxMsgs > 0 || st.MaxBytes > 0) {
		l = append(l, "discard new")
	}
	if len(l) == 0 {
		return " (none)"
	}
	return " (" + strings.Join(l, ", ") + ")"
}

// seqRange is an inclusive range of stream sequences.
type seqRange struct{ first, last uint64 }

func (r seqRange) count() uint64 { return r.last - r.first + 1 }

// ranges collects sequences, added in increasing order, as ranges.
type ranges []seqRange

func (rs *ranges) add(seq uint64) {
	if n := len(*rs); n > 0 && (*rs)[n-1].last+1 == seq {
		(*rs)[n-1].last = seq
		return
	}
	*rs = append(*rs, seqRange{seq, seq})
}

func (rs ranges) total() uint64 {
	var n uint64
	for _, r := range rs {
		n += r.count()
	}
	return n
}

// without returns rs less the sequences from first to last.
func (rs ranges) without(first, last uint64) ranges {
	if first > last {
		return rs
	}
	var out ranges
	for _, r := range rs {
		if r.last < first || r.first > last {
			out = append(out, r)
			continue
		}
		if r.first < first {
			out = append(out, seqRange{r.first, first - 1})
		}
		if r.last > last {
			out = append(out, seqRange{last + 1, r.last})
		}
	}
	return out
}
