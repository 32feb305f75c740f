package tlog

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"
)

// Log is a log's stored checkpoints read back and checked against each
// other: each record's window must extend the checkpoint before it (its
// leaves, after that checkpoint's compact range, produce its signed root),
// and a consistency proof between each two checkpoints in a row, made from
// the stored leaves, must verify against their signed roots. Tree holds
// the checkpointed leaves: from the first checkpoint's window on (from 0
// when the checkpoints stream holds the log's first checkpoint).
type Log struct {
	// Checkpoints are the records that read back, by size.
	Checkpoints []*Stored
	// Tree holds the checkpointed leaf hashes (nil when there is no
	// checkpoint).
	Tree *Tree
	// Problems are what did not fit: a record that does not read back or
	// does not extend the one before, two checkpoints that are not
	// consistent, a checkpoint missing between two.
	Problems []Finding
}

// Latest is the largest checkpoint, nil when there is none.
func (l *Log) Latest() *Stored {
	if len(l.Checkpoints) == 0 {
		return nil
	}
	return l.Checkpoints[len(l.Checkpoints)-1]
}

// At returns the stored checkpoint of size n.
func (l *Log) At(n uint64) *Stored {
	i, ok := slices.BinarySearchFunc(l.Checkpoints, n, func(s *Stored, n uint64) int { return cmp.Compare(s.Size, n) })
	if !ok {
		return nil
	}
	return l.Checkpoints[i]
}

// windowOf returns the checkpoint whose window holds stream sequence seq
// (the first of size >= seq), nil when none does.
func (l *Log) windowOf(seq uint64) *Stored {
	i := sort.Search(len(l.Checkpoints), func(i int) bool { return l.Checkpoints[i].Size >= seq })
	if i == len(l.Checkpoints) {
		return nil
	}
	return l.Checkpoints[i]
}

// prevTime is when the stream stored the last message before the window
// holding seq (zero when unknown): every message of that window was
// stored at or after it.
func (l *Log) prevTime(seq uint64) time.Time {
	w := l.windowOf(seq)
	if w == nil {
		return time.Time{}
	}
	if p := l.At(w.Record.PrevSize); p != nil {
		return p.Record.LastTime
	}
	return time.Time{}
}

// RunsIn lists the runs the stored windows name between stream sequences
// first and last (inclusive), as the records' unauthenticated index says.
func (l *Log) RunsIn(first, last uint64) []RunSpan {
	var out []RunSpan
	for _, s := range l.Checkpoints {
		for _, r := range s.Record.Runs {
			if r.Last >= first && r.First <= last {
				out = append(out, r)
			}
		}
	}
	return out
}

// NewLog checks stored records (in any order) against each other. A
// record that does not read back is a problem, not an error.
func NewLog(records []*Stored, bad []Finding) *Log {
	l := &Log{Problems: bad}
	rs := slices.Clone(records)
	slices.SortStableFunc(rs, func(a, b *Stored) int { return cmp.Compare(a.Size, b.Size) })
	for _, r := range rs {
		if n := len(l.Checkpoints); n > 0 && l.Checkpoints[n-1].Size == r.Size {
			if prev := l.Checkpoints[n-1]; prev.Root != r.Root {
				l.problem(Finding{Kind: FindInconsistent, First: r.Size, Last: r.Size,
					Detail: fmt.Sprintf("two checkpoints of size %d with different roots (%s, %s): the log signed two histories", r.Size, prev.Root, r.Root)})
			}
			continue // the same checkpoint stored twice
		}
		l.add(r)
	}
	return l
}

func (l *Log) problem(f Finding) {
	f.Fails = true
	l.Problems = append(l.Problems, f)
}

// add places r after the checkpoints added so far.
func (l *Log) add(r *Stored) {
	var prev *Stored
	if n := len(l.Checkpoints); n > 0 {
		prev = l.Checkpoints[n-1]
	}
	l.Checkpoints = append(l.Checkpoints, r)
	restart := func() {
		t, err := NewTree(r.Size, r.Range)
		if err != nil {
			panic(err) // ParseRecord checked the range's length
		}
		l.Tree = t
	}
	switch {
	case l.Tree == nil && r.Record.PrevSize == 0:
		l.Tree, _ = NewTree(0, nil)
	case l.Tree == nil:
		restart() // the checkpoints before it are not stored: its window cannot be placed
		return
	case r.Record.PrevSize != l.Tree.Size():
		l.problem(Finding{Kind: FindMissingCheckpoint, First: l.Tree.Size() + 1, Last: r.Size,
			Detail: fmt.Sprintf("the checkpoint of size %d extends one of size %d, which is not stored (the latest before it is of size %d): the checkpoints stream lost it", r.Size, r.Record.PrevSize, l.Tree.Size())})
		restart()
		return
	}
	for _, h := range r.Window {
		l.Tree.Append(h)
	}
	root, err := l.Tree.Root(r.Size)
	if err != nil || root != r.Root {
		l.problem(Finding{Kind: FindBadCheckpoint, First: r.Record.PrevSize + 1, Last: r.Size,
			Detail: fmt.Sprintf("the checkpoint of size %d: its stored leaves, after the checkpoint before it, do not produce its signed root: the checkpoints stream was altered", r.Size)})
		restart()
		return
	}
	if prev == nil {
		return
	}
	path, err := l.Tree.ConsistencyProof(prev.Size, r.Size)
	if err == nil {
		err = VerifyConsistency(prev.Size, r.Size, path, prev.Root, r.Root)
	}
	if err != nil {
		l.problem(Finding{Kind: FindInconsistent, First: prev.Size + 1, Last: r.Size,
			Detail: fmt.Sprintf("the checkpoint of size %d does not extend the one of size %d: %v", r.Size, prev.Size, err)})
	}
}
