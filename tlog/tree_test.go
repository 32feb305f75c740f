package tlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/hookbus/hookbus/tlog"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
)

// leafHashes returns n distinct leaf hashes.
func leafHashes(n int) []tlog.Hash {
	out := make([]tlog.Hash, n)
	for i := range out {
		out[i] = tlog.HashLeaf(fmt.Appendf(nil, "leaf %d", i))
	}
	return out
}

// The tree agrees with the merkle library's reference tree on roots,
// inclusion proofs and consistency proofs, whether it holds every leaf or
// only those after a compact range (as after retention).
func TestTreeAgreesWithReference(t *testing.T) {
	const n = 45
	hs := leafHashes(n)
	ref := testonly.New(rfc6962.DefaultHasher)
	for _, h := range hs {
		ref.Append(h[:])
	}
	for _, begin := range []uint64{0, 1, 7, 16, 21, 44} {
		full, _ := tlog.NewTree(0, nil)
		for _, h := range hs[:begin] {
			full.Append(h)
		}
		base, err := full.Range(begin)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := tlog.NewTree(begin, base)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs[begin:] {
			tr.Append(h)
		}
		for size := begin; size <= n; size++ {
			root, err := tr.Root(size)
			if err != nil {
				t.Fatalf("begin %d: root %d: %v", begin, size, err)
			}
			if !bytes.Equal(root[:], ref.HashAt(size)) {
				t.Fatalf("begin %d: root %d differs from the reference", begin, size)
			}
			for i := begin; i < size; i++ {
				p, err := tr.InclusionProof(i, size)
				if err != nil {
					t.Fatalf("begin %d: inclusion %d/%d: %v", begin, i, size, err)
				}
				want, _ := ref.InclusionProof(i, size)
				if !equal(p, want) {
					t.Fatalf("begin %d: inclusion %d/%d differs", begin, i, size)
				}
				if err := tlog.VerifyInclusion(i, size, hs[i], p, root); err != nil {
					t.Fatal(err)
				}
			}
			for s1 := begin; s1 <= size; s1++ {
				p, err := tr.ConsistencyProof(s1, size)
				if err != nil {
					t.Fatalf("begin %d: consistency %d-%d: %v", begin, s1, size, err)
				}
				want, _ := ref.ConsistencyProof(s1, size)
				if !equal(p, want) {
					t.Fatalf("begin %d: consistency %d-%d differs", begin, s1, size)
				}
			}
		}
		if begin >= 7 { // leaf begin-2 is inside a node of the compact range
			if _, err := tr.InclusionProof(begin-2, n); !errors.Is(err, tlog.ErrNotHeld) {
				t.Fatalf("begin %d: a proof of a leaf before the tree: %v", begin, err)
			}
		}
	}
}

func equal(a []tlog.Hash, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i][:], b[i]) {
			return false
		}
	}
	return true
}
