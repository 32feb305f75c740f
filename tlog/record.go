package tlog

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// Record is one checkpoint as the checkpoints stream stores it (one JSON
// message): the signed checkpoint, and what proving the events it covers
// needs once they expire: the compact range of the tree at its size, and
// the leaf hashes of its window, the leaves added since the log's previous
// checkpoint. The leaves are authenticated by the signed root they produce
// (with the previous checkpoint's range); Runs and the times are not, and
// serve reports only. docs/PROTOCOL.md ("Checkpoints") has the format.
type Record struct {
	// Checkpoint is the signed note (C2SP tlog-checkpoint): the log's
	// signature and the witnesses' cosignatures.
	Checkpoint string `json:"checkpoint"`
	// PrevSize is the size of the log's previous checkpoint (0 for the
	// first): the window is the leaves [PrevSize, size).
	PrevSize uint64 `json:"prev_size"`
	// Range is the compact range [0, size): the hashes of the perfect
	// subtrees covering it, left to right, in base64.
	Range []string `json:"range"`
	// Leaves are the window's leaf hashes but those of its gaps, in order:
	// their 32-byte hashes concatenated, in base64.
	Leaves string `json:"leaves"`
	// Gaps are the window's stream sequences that held no message when
	// the checkpointer read past them: inclusive ranges [first, last].
	Gaps [][2]uint64 `json:"gaps,omitempty"`
	// Runs are the runs whose events the window holds.
	Runs []RunSpan `json:"runs,omitempty"`
	// LastTime is when the stream stored the window's last message (zero
	// when the window is only gaps).
	LastTime time.Time `json:"last_time,omitzero"`
	// Created is when the checkpointer made the checkpoint.
	Created time.Time `json:"created"`
	// NewLog, on a log's first checkpoint, is the operator's decision to
	// start it over a previous log.
	NewLog *LogStart `json:"new_log,omitempty"`
}

// RunSpan is a run's events in a window: its ids, the stream sequences of
// its first and last event there and how many there are.
type RunSpan struct {
	Run     string `json:"run"`
	Agent   string `json:"agent"`
	Session string `json:"session"`
	First   uint64 `json:"first"`
	Last    uint64 `json:"last"`
	Events  int    `json:"events"`
}

// MaxWindow is the most messages one checkpoint may add (gaps do not
// count: they are stored as ranges): its record (43 bytes of JSON per leaf)
// then stays well under NATS' default 1 MiB message limit.
const MaxWindow = 16384

// maxSpan bounds the sequences one record's window may cover, gaps
// included, so that a record cannot make a verifier expand an unbounded
// window: 2^24 sequences (512 MiB of leaf hashes).
const maxSpan = 1 << 24

// NewRecord makes the record of a signed checkpoint of size whose tree's
// compact range is rng and whose window, from prevSize, has the leaf
// hashes window (gaps included; gaps says which sequences were gaps, in
// order).
func NewRecord(signed []byte, prevSize uint64, rng []Hash, window []Hash, gaps [][2]uint64, runs []RunSpan, lastTime time.Time) *Record {
	r := &Record{Checkpoint: string(signed), PrevSize: prevSize, Gaps: gaps, Runs: runs, LastTime: lastTime.UTC(), Created: time.Now().UTC()}
	r.Range = make([]string, len(rng))
	for i, h := range rng {
		r.Range[i] = h.String()
	}
	isGap := func(seq uint64) bool {
		return slices.ContainsFunc(gaps, func(g [2]uint64) bool { return seq >= g[0] && seq <= g[1] })
	}
	leaves := make([]byte, 0, len(window)*len(Hash{}))
	for i, h := range window {
		if !isGap(prevSize + uint64(i) + 1) {
			leaves = append(leaves, h[:]...)
		}
	}
	r.Leaves = base64.StdEncoding.EncodeToString(leaves)
	return r
}

// Stored is a record read back: its checkpoint verified, its range and
// window decoded, and its range checked against the signed root.
type Stored struct {
	*Signed
	Record *Record
	// Range is the compact range [0, Size).
	Range []Hash
	// Window is the leaf hashes [PrevSize, Size), gaps included.
	Window []Hash
	// Seq is the record's sequence in the checkpoints stream (0 when read
	// otherwise).
	Seq uint64
}

// ParseRecord reads a stored record and checks it alone: its checkpoint's
// signature (logKey; witnesses' cosignatures as OpenCheckpoint does), its
// range (it must produce the signed root) and its window (as many leaves
// as it adds, gaps in it). That the window extends the previous
// checkpoint is for Log to check. The error wraps ErrMalformed or
// ErrSignature.
func ParseRecord(data []byte, logKey note.Verifier, witnesses ...note.Verifier) (*Stored, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: checkpoint record: %v", ErrMalformed, err)
	}
	signed, err := OpenCheckpoint([]byte(r.Checkpoint), logKey, witnesses...)
	if err != nil {
		return nil, err
	}
	s := &Stored{Signed: signed, Record: &r}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: checkpoint record of size %d: %s", ErrMalformed, signed.Size, fmt.Sprintf(format, args...))
	}
	for _, h := range r.Range {
		hh, err := ParseHash(h)
		if err != nil {
			return nil, bad("range: %v", err)
		}
		s.Range = append(s.Range, hh)
	}
	rng, err := NewRange(signed.Size, s.Range)
	if err != nil {
		return nil, bad("%v", err)
	}
	if RootOf(rng) != signed.Root {
		return nil, bad("its compact range does not produce its signed root")
	}
	if r.PrevSize > signed.Size {
		return nil, bad("previous size %d is larger", r.PrevSize)
	}
	raw, err := base64.StdEncoding.DecodeString(r.Leaves)
	if err != nil || len(raw)%len(Hash{}) != 0 {
		return nil, bad("leaves are not base64 32-byte hashes")
	}
	if n := len(raw) / len(Hash{}); n > MaxWindow {
		return nil, bad("%d leaves stored (at most %d)", n, MaxWindow)
	}
	if signed.Size-r.PrevSize > maxSpan {
		return nil, bad("a window of %d sequences is more than a verifier expands (%d)", signed.Size-r.PrevSize, maxSpan)
	}
	var last uint64 = r.PrevSize
	for _, g := range r.Gaps {
		if g[0] <= last || g[1] < g[0] || g[1] > signed.Size {
			return nil, bad("gap %d-%d is out of order or outside the window (%d, %d]", g[0], g[1], r.PrevSize, signed.Size)
		}
		last = g[1]
	}
	s.Window = make([]Hash, 0, signed.Size-r.PrevSize)
	gi := 0
	for seq := r.PrevSize + 1; seq <= signed.Size; seq++ {
		if gi < len(r.Gaps) && seq >= r.Gaps[gi][0] {
			s.Window = append(s.Window, GapHash(seq))
			if seq == r.Gaps[gi][1] {
				gi++
			}
			continue
		}
		if len(raw) == 0 {
			return nil, bad("fewer leaves than the window holds")
		}
		s.Window = append(s.Window, Hash(raw[:len(Hash{})]))
		raw = raw[len(Hash{}):]
	}
	if len(raw) > 0 {
		return nil, bad("more leaves than the window holds")
	}
	return s, nil
}

// Marshal is the record's JSON.
func (r *Record) Marshal() ([]byte, error) { return json.Marshal(r) }
