package tlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/transparency-dev/merkle/rfc6962"
)

// The leaves. Leaf i of the tree is the message of the events stream at
// stream sequence i+1, so a tree of size n covers the stream's sequences 1
// to n. Its leaf data is the lines
//
//	hookbus-leaf-v1
//	<the stream sequence, decimal>
//	<kind: event, message or gap>
//	... the kind's lines
//
// each ended by "\n": for an event, the subject it was stored on, its chain
// canonical form (events.Event.Canonical) and its ce-signature; for any
// other message, its subject, headers and the SHA-256 of its body; for a
// sequence that held no message when it was checkpointed, nothing more.
// docs/PROTOCOL.md ("Checkpoints") has the exact form, so a verifier in
// another language recomputes it. The leaf hash is RFC 6962's:
// SHA-256(0x00 || leaf data).

// LeafVersion is the first line of every leaf.
const LeafVersion = "hookbus-leaf-v1"

// The kinds of leaf.
const (
	// KindEvent: a hookbus event (it decodes, and agrees with its subject).
	KindEvent = "event"
	// KindMessage: a message that is not a hookbus event, which readers
	// skip (malformed or foreign).
	KindMessage = "message"
	// KindGap: no message was stored at the sequence when the
	// checkpointer read past it (deleted or expired before).
	KindGap = "gap"
)

// Hash is a SHA-256 hash: a leaf hash, a node hash or a root.
type Hash [sha256.Size]byte

// String is the hash in standard base64, as checkpoints write root hashes.
func (h Hash) String() string { return base64.StdEncoding.EncodeToString(h[:]) }

// ParseHash reads a base64 hash.
func ParseHash(s string) (Hash, error) {
	var h Hash
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("%w: %q is not a base64 SHA-256 hash", ErrMalformed, s)
	}
	copy(h[:], b)
	return h, nil
}

// HashLeaf is the RFC 6962 leaf hash of leaf data: SHA-256(0x00 || leaf).
func HashLeaf(leaf []byte) Hash {
	return Hash(rfc6962.DefaultHasher.HashLeaf(leaf))
}

// hashChildren is the RFC 6962 hash of an interior node.
func hashChildren(l, r []byte) []byte { return rfc6962.DefaultHasher.HashChildren(l, r) }

// EmptyRoot is the root of the empty tree: the SHA-256 of nothing.
func EmptyRoot() Hash { return Hash(rfc6962.DefaultHasher.EmptyRoot()) }

// Entry is one stored message as the tree sees it, wherever it is stored:
// the leaf data after the sequence line, in each form the message may
// have been checkpointed in. Forms[0] is the form a checkpointer gives it;
// the others are forms a checkpointer of another version, or one that read
// it while its claim-checked data was there or gone, may have given it.
// A verifier accepts a leaf that matches any form: each is a different
// statement about the same stored bytes, and none can be made to match
// another message's leaf.
type Entry struct {
	Forms [][]byte
	// more computes the other forms, when they are needed.
	more func() [][]byte
}

// NewEntry is an entry of the form a checkpointer gives the message, and
// of the other forms more computes when they are needed (nil: none).
func NewEntry(form []byte, more func() [][]byte) Entry {
	return Entry{Forms: [][]byte{form}, more: more}
}

// Complete returns the entry with every form it may have been given.
func (e Entry) Complete() Entry {
	if e.more == nil {
		return e
	}
	return Entry{Forms: append(e.Forms[:len(e.Forms):len(e.Forms)], e.more()...)}
}

// Leaf is the entry's leaf data at stream sequence seq in its form i.
func (e Entry) Leaf(seq uint64, i int) []byte { return leafAt(seq, e.Forms[i]) }

// Hashes are the leaf hashes of the entry's forms at stream sequence seq.
func (e Entry) Hashes(seq uint64) []Hash {
	out := make([]Hash, len(e.Forms))
	for i, f := range e.Forms {
		out[i] = HashLeaf(leafAt(seq, f))
	}
	return out
}

func leafAt(seq uint64, body []byte) []byte {
	b := make([]byte, 0, len(LeafVersion)+22+len(body))
	b = append(b, LeafVersion...)
	b = append(b, '\n')
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, '\n')
	return append(b, body...)
}

// EventForm is the leaf body of a hookbus event stored on subject: kind,
// subject, the event's canonical form (whose last line is dataHash, the
// SHA-256 of its data as stored) and its ce-signature.
func EventForm(subject string, e *events.Event, dataHash [32]byte) []byte {
	var b bytes.Buffer
	b.WriteString(KindEvent + "\n")
	b.WriteString(events.PercentEncode(subject))
	b.WriteByte('\n')
	b.Write(e.Canonical(dataHash))
	b.WriteString(events.PercentEncode(e.Signature))
	b.WriteByte('\n')
	return b.Bytes()
}

// MessageForm is the leaf body of a stored message read as it is, not as
// an event: kind, subject, the number of header values, one line per value
// ("<name> <value>", both percent-encoded; names in byte order, each name's
// values in their order), and the SHA-256 of the body in lower-case hex.
func MessageForm(subject string, header map[string][]string, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString(KindMessage + "\n")
	b.WriteString(events.PercentEncode(subject))
	b.WriteByte('\n')
	names := make([]string, 0, len(header))
	n := 0
	for k, vs := range header {
		names = append(names, k)
		n += len(vs)
	}
	slices.Sort(names)
	b.WriteString(strconv.Itoa(n))
	b.WriteByte('\n')
	for _, k := range names {
		for _, v := range header[k] {
			b.WriteString(events.PercentEncode(k))
			b.WriteByte(' ')
			b.WriteString(events.PercentEncode(v))
			b.WriteByte('\n')
		}
	}
	sum := sha256.Sum256(body)
	b.WriteString(hex.EncodeToString(sum[:]))
	b.WriteByte('\n')
	return b.Bytes()
}

// gapForm is the leaf body of a sequence that held no message.
var gapForm = []byte(KindGap + "\n")

// GapLeaf is the leaf data of stream sequence seq when it held no message.
func GapLeaf(seq uint64) []byte { return leafAt(seq, gapForm) }

// GapHash is the leaf hash of GapLeaf(seq).
func GapHash(seq uint64) Hash { return HashLeaf(GapLeaf(seq)) }

// LeafInfo is what a leaf says, read back (ParseLeaf).
type LeafInfo struct {
	Seq     uint64 `json:"seq"`
	Kind    string `json:"kind"`
	Subject string `json:"subject,omitempty"`
	// For an event: its attributes as the canonical form holds them, the
	// canonical form itself and its chain hash (hex SHA-256, what the run's
	// next event carries as prevhash), and its signature.
	EventID   string `json:"event_id,omitempty"`
	Type      string `json:"type,omitempty"`
	AgentID   string `json:"agent_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	RunID     string `json:"run_id,omitempty"`
	RunSeq    uint64 `json:"run_seq,omitempty"`
	PrevHash  string `json:"prev_hash,omitempty"`
	Signer    string `json:"signer,omitempty"`
	Signature string `json:"signature,omitempty"`
	ChainHash string `json:"chain_hash,omitempty"`
}

// canonicalLines is how many lines events.Event.Canonical writes.
const canonicalLines = 17

// ParseLeaf reads leaf data back. The error wraps ErrMalformed.
func ParseLeaf(leaf []byte) (*LeafInfo, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: leaf: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
	if len(leaf) == 0 || leaf[len(leaf)-1] != '\n' {
		return nil, bad("does not end with a newline")
	}
	lines := strings.Split(string(leaf[:len(leaf)-1]), "\n")
	if len(lines) < 3 || lines[0] != LeafVersion {
		return nil, bad("does not start with %s, a sequence and a kind", LeafVersion)
	}
	seq, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || seq == 0 || strconv.FormatUint(seq, 10) != lines[1] {
		return nil, bad("sequence %q", lines[1])
	}
	info := &LeafInfo{Seq: seq, Kind: lines[2]}
	pct := func(s string) (string, error) {
		v, err := events.PercentDecode(s)
		if err != nil {
			return "", bad("%v", err)
		}
		return v, nil
	}
	switch info.Kind {
	case KindGap:
		if len(lines) != 3 {
			return nil, bad("a gap has no more lines")
		}
		return info, nil
	case KindMessage:
		if len(lines) < 5 {
			return nil, bad("a message has a subject, a header count and a body hash")
		}
		if info.Subject, err = pct(lines[3]); err != nil {
			return nil, err
		}
		return info, nil
	case KindEvent:
	default:
		return nil, bad("unknown kind %q", info.Kind)
	}
	if len(lines) != 3+1+canonicalLines+1 {
		return nil, bad("an event leaf has %d lines, not %d", len(lines), 3+1+canonicalLines+1)
	}
	canon := lines[4 : 4+canonicalLines]
	if canon[0] != events.ChainVersion {
		return nil, bad("canonical form %q", canon[0])
	}
	fields := make([]string, len(canon))
	for i, l := range canon {
		if fields[i], err = pct(l); err != nil {
			return nil, err
		}
	}
	if info.Subject, err = pct(lines[3]); err != nil {
		return nil, err
	}
	if info.Signature, err = pct(lines[len(lines)-1]); err != nil {
		return nil, err
	}
	info.EventID, info.Type, info.AgentID, info.SessionID, info.RunID = fields[1], fields[2], fields[6], fields[7], fields[8]
	if info.RunSeq, err = strconv.ParseUint(fields[10], 10, 64); err != nil {
		return nil, bad("run seq %q", fields[10])
	}
	info.PrevHash, info.Signer = fields[14], fields[15]
	sum := sha256.Sum256([]byte(strings.Join(canon, "\n") + "\n"))
	info.ChainHash = hex.EncodeToString(sum[:])
	return info, nil
}
