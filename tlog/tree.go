package tlog

import (
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// rangeFactory makes RFC 6962 compact ranges.
var rangeFactory = &compact.RangeFactory{Hash: hashChildren}

// NewRange returns the compact range [0, size) made of hashes (left to
// right, as Range.Hashes lists them), or an empty range at 0 when size is 0.
// The error wraps ErrMalformed when the hashes do not fit the size.
func NewRange(size uint64, hashes []Hash) (*compact.Range, error) {
	if want := compact.RangeSize(0, size); len(hashes) != want {
		return nil, fmt.Errorf("%w: a compact range of size %d has %d hashes, not %d", ErrMalformed, size, want, len(hashes))
	}
	return rangeFactory.NewRange(0, size, bytesOf(hashes))
}

// RootOf is the root of the tree a compact range [0, n) covers.
func RootOf(r *compact.Range) Hash {
	if r.End() == 0 {
		return EmptyRoot()
	}
	h, err := r.GetRootHash(nil)
	if err != nil {
		panic(err) // a range built here always starts at 0
	}
	return Hash(h)
}

// Tree is an RFC 6962 Merkle tree that holds its leaves from Begin on, and
// before Begin only the compact range of [0, Begin): what a log keeps once
// its oldest entries expired. It computes roots, inclusion proofs and
// consistency proofs for every size from Begin on, and inclusion proofs of
// the leaves it holds. Nodes are computed once and kept. A Tree is not safe
// for concurrent use.
type Tree struct {
	begin  uint64
	base   map[compact.NodeID]Hash
	leaves []Hash
	cache  [][]Hash // per level, nodes whose leaves are all held, offset by the level's first
}

// NewTree returns a tree whose first begin leaves are known by their
// compact range (hashes, left to right; none for begin 0). The error wraps
// ErrMalformed when the hashes do not fit.
func NewTree(begin uint64, base []Hash) (*Tree, error) {
	if want := compact.RangeSize(0, begin); len(base) != want {
		return nil, fmt.Errorf("%w: a compact range of size %d has %d hashes, not %d", ErrMalformed, begin, want, len(base))
	}
	t := &Tree{begin: begin, base: make(map[compact.NodeID]Hash, len(base))}
	for i, id := range compact.RangeNodes(0, begin, nil) {
		t.base[id] = base[i]
	}
	return t, nil
}

// Begin is the first leaf the tree holds.
func (t *Tree) Begin() uint64 { return t.begin }

// Size is the tree's size: Begin plus the leaves appended.
func (t *Tree) Size() uint64 { return t.begin + uint64(len(t.leaves)) }

// Append adds a leaf hash.
func (t *Tree) Append(h Hash) { t.leaves = append(t.leaves, h) }

// Leaf returns the hash of leaf i (Begin <= i < Size).
func (t *Tree) Leaf(i uint64) (Hash, bool) {
	if i < t.begin || i >= t.Size() {
		return Hash{}, false
	}
	return t.leaves[i-t.begin], true
}

// node returns the hash of the perfect node id of the current tree.
func (t *Tree) node(id compact.NodeID) (Hash, error) {
	a, b := id.Coverage()
	if b > t.Size() {
		return Hash{}, fmt.Errorf("%w: node %d/%d ends past the tree's size %d", errNoNode, id.Level, id.Index, t.Size())
	}
	if h, ok := t.base[id]; ok {
		return h, nil
	}
	if a >= t.begin {
		if id.Level == 0 {
			return t.leaves[a-t.begin], nil
		}
		first := (t.begin + (1 << id.Level) - 1) >> id.Level // the level's first node held
		for uint(len(t.cache)) <= id.Level {
			t.cache = append(t.cache, nil)
		}
		lvl := t.cache[id.Level]
		i := id.Index - first
		if i < uint64(len(lvl)) && lvl[i] != (Hash{}) {
			return lvl[i], nil
		}
		h, err := t.children(id)
		if err != nil {
			return Hash{}, err
		}
		for uint64(len(lvl)) <= i {
			lvl = append(lvl, Hash{})
		}
		lvl[i] = h
		t.cache[id.Level] = lvl
		return h, nil
	}
	if id.Level == 0 {
		return Hash{}, fmt.Errorf("%w: leaf %d is before the tree's first held leaf %d and not a node of its compact range", errNoNode, a, t.begin)
	}
	return t.children(id)
}

func (t *Tree) children(id compact.NodeID) (Hash, error) {
	l, err := t.node(compact.NewNodeID(id.Level-1, id.Index*2))
	if err != nil {
		return Hash{}, err
	}
	r, err := t.node(compact.NewNodeID(id.Level-1, id.Index*2+1))
	if err != nil {
		return Hash{}, err
	}
	return Hash(hashChildren(l[:], r[:])), nil
}

// Range returns the compact range [0, size) of the tree (Begin <= size <=
// Size). The error wraps ErrNotHeld.
func (t *Tree) Range(size uint64) ([]Hash, error) {
	if size < t.begin || size > t.Size() {
		return nil, fmt.Errorf("%w: size %d is outside [%d, %d]", ErrNotHeld, size, t.begin, t.Size())
	}
	ids := compact.RangeNodes(0, size, nil)
	out := make([]Hash, len(ids))
	for i, id := range ids {
		h, err := t.node(id)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotHeld, err)
		}
		out[i] = h
	}
	return out, nil
}

// Root returns the root of the tree of size (Begin <= size <= Size). The
// error wraps ErrNotHeld.
func (t *Tree) Root(size uint64) (Hash, error) {
	hs, err := t.Range(size)
	if err != nil {
		return Hash{}, err
	}
	r, err := NewRange(size, hs)
	if err != nil {
		return Hash{}, err
	}
	return RootOf(r), nil
}

// proofOf fetches the hashes of nodes and folds its ephemeral node.
func (t *Tree) proofOf(nodes proof.Nodes) ([]Hash, error) {
	hs := make([][]byte, len(nodes.IDs))
	for i, id := range nodes.IDs {
		h, err := t.node(id)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotHeld, err)
		}
		hs[i] = h[:]
	}
	hs, err := nodes.Rehash(hs, hashChildren)
	if err != nil {
		return nil, err
	}
	out := make([]Hash, len(hs))
	for i, h := range hs {
		copy(out[i][:], h)
	}
	return out, nil
}

// InclusionProof returns the RFC 6962 inclusion proof (audit path) of leaf
// index in the tree of size (index < size <= Size), from the leaf's sibling
// up. The error wraps ErrNotHeld when the proof needs a node the tree does
// not hold (index before Begin).
func (t *Tree) InclusionProof(index, size uint64) ([]Hash, error) {
	if size < t.begin || size > t.Size() {
		return nil, fmt.Errorf("%w: size %d is outside [%d, %d]", ErrNotHeld, size, t.begin, t.Size())
	}
	nodes, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotHeld, err)
	}
	return t.proofOf(nodes)
}

// ConsistencyProof returns the RFC 6962 consistency proof from the tree of
// size1 to the tree of size2 (Begin <= size1 <= size2 <= Size). The error
// wraps ErrNotHeld.
func (t *Tree) ConsistencyProof(size1, size2 uint64) ([]Hash, error) {
	if size1 < t.begin || size2 > t.Size() || size1 > size2 {
		return nil, fmt.Errorf("%w: sizes %d to %d are outside [%d, %d]", ErrNotHeld, size1, size2, t.begin, t.Size())
	}
	nodes, err := proof.Consistency(size1, size2)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotHeld, err)
	}
	return t.proofOf(nodes)
}

// VerifyInclusion checks an RFC 6962 inclusion proof of leafHash at index
// in the tree of size whose root is root. The error wraps ErrProof.
func VerifyInclusion(index, size uint64, leafHash Hash, path []Hash, root Hash) error {
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, index, size, leafHash[:], bytesOf(path), root[:]); err != nil {
		return proofError("inclusion of leaf %d in the tree of size %d", index, size, err)
	}
	return nil
}

// VerifyConsistency checks an RFC 6962 consistency proof between the trees
// of size1 (root1) and size2 (root2). The error wraps ErrProof.
func VerifyConsistency(size1, size2 uint64, path []Hash, root1, root2 Hash) error {
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, size1, size2, bytesOf(path), root1[:], root2[:]); err != nil {
		return proofError("consistency of the tree of size %d with the tree of size %d", size1, size2, err)
	}
	return nil
}

func bytesOf(hs []Hash) [][]byte {
	out := make([][]byte, len(hs))
	for i := range hs {
		out[i] = hs[i][:]
	}
	return out
}

// proofError wraps a proof's failure in ErrProof, saying what it proved; a
// root mismatch (the library prints both roots as byte lists) is said in
// words.
func proofError(format string, a, b uint64, err error) error {
	what := fmt.Sprintf(format, a, b)
	var mismatch proof.RootMismatchError
	if errors.As(err, &mismatch) {
		return fmt.Errorf("%w: %s: the proof leads to another root", ErrProof, what)
	}
	return fmt.Errorf("%w: %s: %v", ErrProof, what, err)
}
