package audit

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"sort"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/record"
	"github.com/nats-io/nkeys"
)

// Kinds of Problem. Which of them fail a run's verification is one rule
// (Problem.Fails, set by Verifier): tampering always does (altered,
// removed, inserted, reordered, after_end, bad_signature, and an answer
// whose identity is not its writer's: identity); a signer not
// trusted does when the verifier trusts some keys (Verifier.Trust);
// unsigned, unchained and unverifiable do when it requires signed runs
// (Verifier.RequireSigned); no_end and lost never do: a run
// without an end is running, waiting or was cut off, which says nothing
// about the record's integrity, and a lost seq is one the run's own end
// declares never stored. docs/PROTOCOL.md ("Tamper evidence") has
// the table.
const (
	// ProblemAltered: an event's content no longer matches the hash the
	// run's next event recorded of it.
	ProblemAltered = "altered"
	// ProblemRemoved: the run's seq numbers have a gap.
	ProblemRemoved = "removed"
	// ProblemLost: a gap in the run's seq numbers that the run's end
	// records as never stored (an append lost in a fault, closed over by
	// the end: events.RunFailed.Lost). A note: the end is part of the
	// chain it closes, so removing an event later is still removed.
	ProblemLost = "lost"
	// ProblemInserted: an event that is not part of the run's chain (a
	// second event with one seq, or one that links to nothing).
	ProblemInserted = "inserted"
	// ProblemLateClaim: a run.started stored after the run's end with the
	// end's seq, chained to the end's predecessor: an attempt's claim that
	// JetStream admitted although the run had ended (a leader change can
	// drop a conditional write's condition). Nothing of it follows the end,
	// so the run's record is what it was. A note.
	ProblemLateClaim = "late_claim"
	// ProblemReordered: an event links to another predecessor than the
	// event before it in seq order.
	ProblemReordered = "reordered"
	// ProblemAfterEnd: an event after the run's terminal event.
	ProblemAfterEnd = "after_end"
	// ProblemNoEnd: the run has no terminal event (running, waiting, cut
	// off, or its end removed).
	ProblemNoEnd = "no_end"
	// ProblemUnsigned: the terminal event carries no signature.
	ProblemUnsigned = "unsigned"
	// ProblemUnknownSigner: the terminal event is signed by a key not among
	// the trusted ones.
	ProblemUnknownSigner = "unknown_signer"
	// ProblemBadSignature: the signature does not verify.
	ProblemBadSignature = "bad_signature"
	// ProblemUnchained: the run's events carry no hash chain (recorded by
	// a producer that does not chain them, or before hookbus did).
	ProblemUnchained = "unchained"
	// ProblemUnverifiable: an event's data is gone (a claim-checked object
	// expired), so its hash cannot be recomputed.
	ProblemUnverifiable = "unverifiable"
)

// Problem is one thing the verification found in a run's record.
type Problem struct {
	Kind    string `json:"kind"`
	Seq     uint64 `json:"seq,omitempty"`
	EventID string `json:"event_id,omitempty"`
	Detail  string `json:"detail"`
	// Fails is set when the problem fails the run's verification (see the
	// kinds); a problem without it is a note (a run not ended, an end not
	// signed when signatures are not required).
	Fails bool `json:"fails,omitempty"`
}

// RunVerdict is the verification of one run's chain.
type RunVerdict struct {
	RunID     string `json:"run_id"`
	AgentID   string `json:"agent_id"`
	SessionID string `json:"session_id"`
	Events    int    `json:"events"`
	Ended     bool   `json:"ended"`
	Signer    string `json:"signer,omitempty"`
	// Intact is set when the run passes: none of its problems fails it.
	Intact   bool      `json:"intact"`
	Problems []Problem `json:"problems,omitempty"`
}

// OK reports whether the run passes verification: none of its problems
// fails it (Problem.Fails).
func (v *RunVerdict) OK() bool {
	return !slices.ContainsFunc(v.Problems, func(p Problem) bool { return p.Fails })
}

// Has reports whether the verdict lists a problem of kind.
func (v *RunVerdict) Has(kind string) bool {
	return slices.ContainsFunc(v.Problems, func(p Problem) bool { return p.Kind == kind })
}

// fails reports whether a problem of kind fails a run verified by v.
func (v *Verifier) fails(kind string) bool {
	switch kind {
	case ProblemNoEnd, ProblemLost, ProblemLateClaim:
		return false
	case ProblemUnknownSigner:
		return len(v.Trust) > 0
	case ProblemUnsigned, ProblemUnchained, ProblemUnverifiable:
		return v.RequireSigned
	}
	return true
}

// Verifier checks runs' hash chains and signatures (events.ChainHash). Add
// the events of the runs to check, in stream order; Verdicts then gives one
// verdict per run. The zero value trusts no key (a signed run is noted
// signed by a key not given) and requires no signature: only tampering
// fails a run.
type Verifier struct {
	// Trust is the set of public keys whose signatures are trusted; when
	// it names any, a run signed by another key fails.
	Trust map[string]bool
	// RequireSigned fails every run whose end is not signed (by a key of
	// Trust, when it names any), or whose chain cannot be checked whole.
	RequireSigned bool
	// Shadow counts the shadow registrations' records Add skipped.
	Shadow int
	runs   map[string][]*events.Event
	order  []string
	pos    map[*events.Event]int
	n      int
}

// Add takes one event (in stream order). A shadow registration's record
// (hook.decided with shadow set, hook.failed with outcome shadow) has no
// seq and is outside its run's chain by design: it is counted (Shadow),
// not verified. Any other event without a seq is verified, and reported.
func (v *Verifier) Add(e *events.Event) {
	if e.Seq == 0 && isShadow(e) {
		v.Shadow++
		return
	}
	if v.runs == nil {
		v.runs, v.pos = map[string][]*events.Event{}, map[*events.Event]int{}
	}
	if _, ok := v.runs[e.RunID]; !ok {
		v.order = append(v.order, e.RunID)
	}
	v.runs[e.RunID] = append(v.runs[e.RunID], e)
	v.pos[e] = v.n
	v.n++
}

// Verdicts returns the verdict of every run added, in the order their first
// events came.
func (v *Verifier) Verdicts() []*RunVerdict {
	out := make([]*RunVerdict, 0, len(v.order))
	for _, id := range v.order {
		out = append(out, v.verify(v.runs[id]))
	}
	return out
}

// verify checks one run's events, all of them as stored, folded by
// record.Effective: a later attempt's run.started supersedes what the
// earlier one wrote after it read the record; one stored after the run's
// end supersedes nothing, so it is reported (inserted, or a late claim),
// never a licence to drop the signed end.
func (v *Verifier) verify(all []*events.Event) *RunVerdict {
	first := all[0]
	res := &RunVerdict{RunID: first.RunID, AgentID: first.AgentID, SessionID: first.SessionID}
	evs := record.Effective(all)
	res.Events = len(evs)
	add := func(kind string, e *events.Event, seq uint64, format string, args ...any) {
		p := Problem{Kind: kind, Seq: seq, Detail: fmt.Sprintf(format, args...)}
		if e != nil {
			p.EventID, p.Seq = e.ID, e.Seq
		}
		res.Problems = append(res.Problems, p)
	}
	seqd := evs[:0:0]
	for _, e := range evs {
		if e.Seq == 0 {
			add(ProblemInserted, e, 0, "%s without a seq: not in the run's sequence", e.Stage)
			continue
		}
		seqd = append(seqd, e)
	}
	evs = seqd
	hashes := make(map[*events.Event]string, len(evs))
	byHash := map[string]*events.Event{}
	for _, e := range evs {
		if e.DataRef != "" && len(e.Data) == 0 {
			add(ProblemUnverifiable, e, 0, "%s's data (%s) is gone: its hash cannot be recomputed", e.Stage, e.DataRef)
			continue
		}
		h := e.ChainHash()
		hashes[e], byHash[h] = h, e
	}
	chain := v.chainOf(evs, hashes, add)
	chained := len(chain) < 2
	for _, e := range chain[min(1, len(chain)):] {
		chained = chained || e.PrevHash != ""
	}
	if !chained {
		add(ProblemUnchained, nil, 0, "none of the run's %d events carries the hash of its predecessor", len(chain))
	}
	// Events stored with another seq than the one they were chained with
	// (two swapped, or renumbered): each is reported once, and the links
	// their move broke are not reported again.
	moved, movedHashes := map[*events.Event]bool{}, map[string]bool{}
	if chained {
		for _, m := range renumbered(chain) {
			moved[m.event], movedHashes[m.hash] = true, true
			add(ProblemReordered, m.event, 0, "%s stored as seq %d was chained as seq %d", m.event.Stage, m.event.Seq, m.chainedAs)
		}
	}
	lost := declaredLost(chain)
	var end *events.Event
	for i, e := range chain {
		if end != nil {
			add(ProblemAfterEnd, e, 0, "%s after the run's %s (seq %d)", e.Stage, end.Stage, end.Seq)
			continue
		}
		want := uint64(i + 1)
		if i > 0 {
			want = chain[i-1].Seq + 1
		}
		if e.Seq != want && lost.covers(want, e.Seq-1) {
			add(ProblemLost, nil, want, "%s never stored: lost in a fault, as the run's end records", seqRange(want, e.Seq-1))
		} else if e.Seq != want {
			if e.Seq-1 == want {
				add(ProblemRemoved, nil, want, "seq %d is missing: removed", want)
			} else {
				add(ProblemRemoved, nil, want, "seqs %d to %d are missing: removed", want, e.Seq-1)
			}
		}
		switch {
		case i == 0 && e.PrevHash != "" && e.Seq == 1:
			add(ProblemAltered, e, 0, "the run's first event names a predecessor")
		case !chained || i == 0 || moved[e] || moved[chain[i-1]] || movedHashes[e.PrevHash]:
		case hashes[chain[i-1]] != "" && e.PrevHash != hashes[chain[i-1]]:
			prev := chain[i-1]
			if other, ok := byHash[e.PrevHash]; ok && other != prev {
				add(ProblemReordered, e, 0, "%s follows seq %d (%s) in the chain, not seq %d", e.Stage, other.Seq, other.Stage, prev.Seq)
			} else if e.Seq == prev.Seq+1 {
				add(ProblemAltered, prev, 0, "%s (seq %d) does not match the hash its successor recorded", prev.Stage, prev.Seq)
			}
		}
		if e.Stage.Terminal() {
			end = e
		}
	}
	for _, e := range chain {
		if p := identityProblem(e); p != "" {
			add(ProblemIdentity, e, 0, "%s", p)
		}
	}
	if end == nil {
		sortProblems(res)
		add(ProblemNoEnd, nil, 0, "no run.completed or run.failed recorded (running, waiting, cut off, or its end removed)")
		return v.judged(res)
	}
	res.Ended, res.Signer = true, end.Signer
	v.checkSignature(end, hashes[end], add)
	sortProblems(res)
	return v.judged(res)
}

// problemFunc adds a problem to a run's verdict: of event e (nil: none),
// or at seq.
type problemFunc func(kind string, e *events.Event, seq uint64, format string, args ...any)

// chainOf puts a run's events in seq order; of two events with one seq,
// the one that links in stays in the chain, the other is reported
// inserted.
func (v *Verifier) chainOf(evs []*events.Event, hashes map[*events.Event]string, add problemFunc) []*events.Event {
	sort.SliceStable(evs, func(i, j int) bool {
		return cmp.Or(cmp.Compare(evs[i].Seq, evs[j].Seq), cmp.Compare(v.pos[evs[i]], v.pos[evs[j]])) < 0
	})
	var chain []*events.Event
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		if len(chain) > 0 && chain[len(chain)-1].Seq == e.Seq {
			prev := chain[len(chain)-1]
			keep, extra := prev, e
			if links(e, chain[:len(chain)-1], hashes) && !links(prev, chain[:len(chain)-1], hashes) {
				keep, extra = e, prev
			}
			chain[len(chain)-1] = keep
			if keep.Stage.Terminal() && extra.Stage == events.StageRunStarted && v.pos[extra] > v.pos[keep] && links(extra, chain[:len(chain)-1], hashes) {
				add(ProblemLateClaim, extra, 0, "a claim stored after the run's %s, with its seq %d: admitted although the run had ended; nothing of it follows", keep.Stage, keep.Seq)
				continue
			}
			add(ProblemInserted, extra, 0, "a second %s with seq %d, not in the run's chain", extra.Stage, extra.Seq)
			continue
		}
		chain = append(chain, e)
	}
	return chain
}

// checkSignature checks the signature of the run's end over its chain
// hash, and that its signer is trusted.
func (v *Verifier) checkSignature(end *events.Event, hash string, add problemFunc) {
	switch {
	case end.Signature == "" || end.Signer == "":
		add(ProblemUnsigned, end, 0, "the run's end is not signed")
	default:
		sig, err := base64.RawURLEncoding.DecodeString(end.Signature)
		pub, kerr := nkeys.FromPublicKey(end.Signer)
		switch {
		case err != nil || kerr != nil:
			add(ProblemBadSignature, end, 0, "the signature or signer cannot be read")
		case pub.Verify([]byte(hash), sig) != nil:
			add(ProblemBadSignature, end, 0, "the signature by %s does not verify: the run's chain was changed after it was signed", end.Signer)
		case !v.Trust[end.Signer]:
			add(ProblemUnknownSigner, end, 0, "signed by %s, a key not trusted (give it with --public-key)", end.Signer)
		}
	}
}

func sortProblems(res *RunVerdict) {
	slices.SortStableFunc(res.Problems, func(a, b Problem) int { return cmp.Compare(a.Seq, b.Seq) })
}

// judged marks which of res's problems fail it.
func (v *Verifier) judged(res *RunVerdict) *RunVerdict {
	for i := range res.Problems {
		res.Problems[i].Fails = v.fails(res.Problems[i].Kind)
	}
	res.Intact = res.OK()
	return res
}

// links reports whether e's predecessor (by its PrevHash) is the last
// event of chain (or e is a run's first event).
func links(e *events.Event, chain []*events.Event, hashes map[*events.Event]string) bool {
	if len(chain) == 0 {
		return e.PrevHash == ""
	}
	return e.PrevHash == hashes[chain[len(chain)-1]]
}

// move is an event stored with another seq than it was chained with.
type move struct {
	event     *events.Event
	chainedAs uint64
	hash      string // its chain hash as chained
}

// renumbered finds the events of chain whose hash, given another seq, is
// what another event names as its predecessor: events whose seqs were
// swapped or renumbered after they were chained.
func renumbered(chain []*events.Event) []move {
	prevs := map[string]bool{}
	var last uint64
	for _, e := range chain {
		prevs[e.PrevHash] = true
		last = max(last, e.Seq)
	}
	var out []move
	for _, o := range chain {
		if prevs[o.ChainHash()] {
			continue // linked as it is
		}
		c := *o
		for s := uint64(1); s <= last; s++ {
			if s == o.Seq {
				continue
			}
			c.Seq = s
			if h := c.ChainHash(); prevs[h] {
				out = append(out, move{o, s, h})
				break
			}
		}
	}
	return out
}

// isShadow reports whether e is a shadow registration's record.
func isShadow(e *events.Event) bool {
	h, _ := hookCall(e)
	return h != nil && h.Shadow
}

// lostSeqs are the seqs a run's end records as never stored.
type lostSeqs map[uint64]bool

// declaredLost reads the lost seqs of the run's terminal event in chain
// (the first one: anything after it is after_end).
func declaredLost(chain []*events.Event) lostSeqs {
	for _, e := range chain {
		if e.Stage == events.StageRunFailed {
			p, err := events.Data[events.RunFailed](e)
			if err != nil || len(p.Lost) == 0 {
				return nil
			}
			out := make(lostSeqs, len(p.Lost))
			for _, s := range p.Lost {
				if s < e.Seq {
					out[s] = true
				}
			}
			return out
		}
		if e.Stage.Terminal() {
			return nil
		}
	}
	return nil
}

// covers reports whether every seq from first to last is declared lost.
func (l lostSeqs) covers(first, last uint64) bool {
	if len(l) == 0 || last < first {
		return false
	}
	for s := first; s <= last; s++ {
		if !l[s] {
			return false
		}
	}
	return true
}

// seqRange names seqs first to last.
func seqRange(first, last uint64) string {
	if first == last {
		return fmt.Sprintf("seq %d", first)
	}
	return fmt.Sprintf("seqs %d to %d", first, last)
}
