package tlog

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nkeys"
	tproof "github.com/transparency-dev/formats/proof"
	"golang.org/x/mod/sumdb/note"
)

// ProofFormat names the format of a Proof.
const ProofFormat = "hookbus-proof-v1"

// Proof is the proof that a run's events are in the log, at their stream
// sequences, under a signed checkpoint: for each event, its leaf data and
// an RFC 6962 inclusion proof. It is checked offline (VerifyProof) with
// the log's key alone: no stream, no server. Each entry also carries the
// same proof as a C2SP tlog-proof (https://c2sp.org/tlog-proof), its
// extra data the leaf, for tools that read that format.
type Proof struct {
	Format     string `json:"format"`
	Run        string `json:"run"`
	Checkpoint string `json:"checkpoint"`
	// Origin, TreeSize and RootHash repeat the checkpoint's for readers;
	// VerifyProof checks them against it.
	Origin   string       `json:"origin"`
	TreeSize uint64       `json:"tree_size"`
	RootHash string       `json:"root_hash"`
	Entries  []ProofEntry `json:"entries"`
}

// ProofEntry is one event's inclusion.
type ProofEntry struct {
	// Index is the leaf's index: the event's stream sequence minus one.
	Index uint64 `json:"index"`
	// Leaf is the leaf data (base64); LeafHash its RFC 6962 hash,
	// SHA-256(0x00 || leaf) (base64).
	Leaf     string `json:"leaf"`
	LeafHash string `json:"leaf_hash"`
	// Inclusion is the audit path from the leaf's sibling up (base64).
	Inclusion []string `json:"inclusion"`
	// TLogProof is the same proof in the C2SP tlog-proof text format.
	TLogProof string `json:"tlog_proof"`
}

// NewProof makes the proof that leaves (by leaf index) are in the tree of
// signed's size, with inclusion proofs from tree, whose root at that size
// must be signed's. The error wraps ErrNotHeld or ErrProof.
func NewProof(signed *Signed, run string, tree *Tree, leaves map[uint64][]byte) (*Proof, error) {
	root, err := tree.Root(signed.Size)
	if err != nil {
		return nil, err
	}
	if root != signed.Root {
		return nil, fmt.Errorf("%w: the tree of size %d does not have the checkpoint's root", ErrProof, signed.Size)
	}
	p := &Proof{Format: ProofFormat, Run: run, Checkpoint: string(signed.Note), Origin: signed.Origin, TreeSize: signed.Size, RootHash: signed.Root.String()}
	for _, i := range slices.Sorted(maps.Keys(leaves)) {
		leaf := leaves[i]
		h := HashLeaf(leaf)
		if got, ok := tree.Leaf(i); ok && got != h {
			return nil, fmt.Errorf("%w: leaf %d is not the one the tree holds", ErrProof, i)
		}
		path, err := tree.InclusionProof(i, signed.Size)
		if err != nil {
			return nil, err
		}
		e := ProofEntry{Index: i, Leaf: base64.StdEncoding.EncodeToString(leaf), LeafHash: h.String()}
		tp := tproof.TLogProof{Index: i, Checkpoint: signed.Note, ExtraData: leaf}
		for _, x := range path {
			e.Inclusion = append(e.Inclusion, x.String())
			tp.Hashes = append(tp.Hashes, x)
		}
		e.TLogProof = string(tp.Marshal())
		p.Entries = append(p.Entries, e)
	}
	return p, nil
}

// ProofResult is what a verified proof proves.
type ProofResult struct {
	Checkpoint Checkpoint    `json:"checkpoint"`
	Cosigned   []Cosignature `json:"cosigned,omitempty"`
	Run        string        `json:"run"`
	// Events are the leaves proven, read back, in the run's order.
	Events []*LeafInfo `json:"events"`
	// Ended is set when the proof holds the run's terminal event; Signer
	// is its signer when its signature verifies over its chain hash.
	Ended  bool   `json:"ended"`
	Signer string `json:"signer,omitempty"`
	// Linked is set when every event's predecessor (prevhash) is in the
	// proof: the events proven are the run's whole chain up to the last.
	Linked bool `json:"linked"`
	// Findings say why the proof is not of the whole run (FindLeftOut,
	// FindNoEnd, FindDuplicate); Complete is set when there is none.
	Findings []Finding `json:"findings,omitempty"`
	Complete bool      `json:"complete"`
}

// Failing returns the findings that fail the proof, less those of the
// kinds accepted.
func (r *ProofResult) Failing(accept ...string) []Finding {
	return slices.DeleteFunc(slices.Clone(r.Findings), func(f Finding) bool { return slices.Contains(accept, f.Kind) })
}

// VerifyProof checks a proof offline: the checkpoint's signature by
// logKey, the cosignature of every witness given, and for each entry its
// leaf hash and inclusion proof against the checkpoint's root (and that
// its tlog-proof says the same). It reads the leaves back: each must be an
// event of the proof's run at the entry's sequence; a terminal event's
// signature must verify over its chain hash. The error wraps
// ErrMalformed, ErrSignature or ErrProof and names the entry.
func VerifyProof(data []byte, logKey note.Verifier, witnesses ...note.Verifier) (*ProofResult, error) {
	var p Proof
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%w: proof: %v", ErrMalformed, err)
	}
	if p.Format != ProofFormat {
		return nil, fmt.Errorf("%w: proof format %q, not %s", ErrMalformed, p.Format, ProofFormat)
	}
	signed, err := OpenCheckpoint([]byte(p.Checkpoint), logKey, witnesses...)
	if err != nil {
		return nil, err
	}
	if err := signed.RequireCosigned(witnesses...); err != nil {
		return nil, err
	}
	if p.Origin != signed.Origin || p.TreeSize != signed.Size || p.RootHash != signed.Root.String() {
		return nil, fmt.Errorf("%w: the proof's origin, size or root is not its checkpoint's", ErrMalformed)
	}
	if len(p.Entries) == 0 {
		return nil, fmt.Errorf("%w: the proof holds no event", ErrMalformed)
	}
	res := &ProofResult{Checkpoint: signed.Checkpoint, Cosigned: signed.Cosigned, Run: p.Run}
	seen := map[uint64]bool{}
	for _, e := range p.Entries {
		info, err := verifyEntry(e, signed)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", e.Index, err)
		}
		if info.Kind != KindEvent || info.RunID != p.Run {
			return nil, fmt.Errorf("%w: entry %d: not an event of run %s", ErrProof, e.Index, p.Run)
		}
		if seen[e.Index] {
			res.finding(FindDuplicate, info.Seq, info.Seq, "the entry of seq %d is in the proof more than once", info.Seq)
			continue
		}
		seen[e.Index] = true
		res.Events = append(res.Events, info)
	}
	slices.SortStableFunc(res.Events, func(a, b *LeafInfo) int { return cmp.Or(cmp.Compare(a.RunSeq, b.RunSeq), cmp.Compare(a.Seq, b.Seq)) })
	if err := res.chain(); err != nil {
		return nil, err
	}
	res.whole()
	res.Complete = len(res.Findings) == 0
	if !res.Complete {
		var kinds []string
		for _, f := range res.Findings {
			kinds = append(kinds, f.Kind)
		}
		return res, fmt.Errorf("%w: %s", ErrIncomplete, strings.Join(slices.Compact(kinds), ", "))
	}
	return res, nil
}

func (r *ProofResult) finding(kind string, first, last uint64, format string, args ...any) {
	r.Findings = append(r.Findings, Finding{Kind: kind, First: first, Last: last, Detail: fmt.Sprintf(format, args...), Fails: true})
}

// whole checks that the events are the run's from its first to its end,
// each once: run sequence numbers from 1 without a gap or a repeat, each
// event's predecessor in the proof, an end.
func (r *ProofResult) whole() {
	var next uint64 = 1
	for i, e := range r.Events {
		switch {
		case i > 0 && (e.RunSeq == r.Events[i-1].RunSeq || e.EventID == r.Events[i-1].EventID):
			r.finding(FindDuplicate, e.Seq, e.Seq, "event #%03d is in the proof twice (seqs %d and %d)", e.RunSeq, r.Events[i-1].Seq, e.Seq)
			continue
		case e.RunSeq > next:
			r.finding(FindLeftOut, 0, 0, "the run's events #%03d-#%03d are not in the proof (the next proven is #%03d, seq %d)", next, e.RunSeq-1, e.RunSeq, e.Seq)
		}
		next = e.RunSeq + 1
	}
	if !r.Linked && !slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Kind == FindLeftOut }) {
		r.finding(FindLeftOut, 0, 0, "some events' predecessors (prevhash) are not in the proof")
	}
	if !r.Ended {
		last := "no event"
		if n := len(r.Events); n > 0 {
			last = fmt.Sprintf("#%03d, seq %d", r.Events[n-1].RunSeq, r.Events[n-1].Seq)
		}
		r.finding(FindNoEnd, 0, 0, "the proof holds no end of the run (its last event is %s): the run had not ended at the checkpoint, or its end was left out", last)
	}
}

func verifyEntry(e ProofEntry, signed *Signed) (*LeafInfo, error) {
	leaf, err := base64.StdEncoding.DecodeString(e.Leaf)
	if err != nil {
		return nil, fmt.Errorf("%w: leaf is not base64", ErrMalformed)
	}
	h := HashLeaf(leaf)
	if want, err := ParseHash(e.LeafHash); err != nil || want != h {
		return nil, fmt.Errorf("%w: the leaf hash is not the hash of the leaf", ErrProof)
	}
	path := make([]Hash, len(e.Inclusion))
	for i, s := range e.Inclusion {
		if path[i], err = ParseHash(s); err != nil {
			return nil, err
		}
	}
	if err := VerifyInclusion(e.Index, signed.Size, h, path, signed.Root); err != nil {
		return nil, err
	}
	var tp tproof.TLogProof
	if err := tp.Unmarshal([]byte(e.TLogProof)); err != nil {
		return nil, fmt.Errorf("%w: tlog-proof: %v", ErrMalformed, err)
	}
	same := tp.Index == e.Index && bytes.Equal(tp.ExtraData, leaf) && bytes.Equal(tp.Checkpoint, signed.Note) && len(tp.Hashes) == len(path)
	for i := 0; same && i < len(path); i++ {
		same = Hash(tp.Hashes[i]) == path[i]
	}
	if !same {
		return nil, fmt.Errorf("%w: its tlog-proof is not the same proof", ErrProof)
	}
	info, err := ParseLeaf(leaf)
	if err != nil {
		return nil, err
	}
	if info.Seq != e.Index+1 {
		return nil, fmt.Errorf("%w: the leaf says stream sequence %d, its index %d", ErrProof, info.Seq, e.Index)
	}
	return info, nil
}

// chain checks the events' links and the run's signed end.
func (r *ProofResult) chain() error {
	byHash := map[string]bool{}
	for _, e := range r.Events {
		byHash[e.ChainHash] = true
	}
	r.Linked = true
	for _, e := range r.Events {
		if e.PrevHash != "" && !byHash[e.PrevHash] {
			r.Linked = false
		}
		if e.Type != events.TypePrefix+string(events.StageRunCompleted) && e.Type != events.TypePrefix+string(events.StageRunFailed) {
			continue
		}
		r.Ended = true
		if e.Signature == "" || e.Signer == "" {
			continue
		}
		sig, err := base64.RawURLEncoding.DecodeString(e.Signature)
		pub, kerr := nkeys.FromPublicKey(e.Signer)
		if err != nil || kerr != nil || pub.Verify([]byte(e.ChainHash), sig) != nil {
			return fmt.Errorf("%w: the run's end (seq %d) carries a signature by %s that does not verify over its chain hash", ErrProof, e.Seq, e.Signer)
		}
		r.Signer = e.Signer
	}
	return nil
}
