package tlog

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	tnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Checkpoint is a log's tree head: the note text of a C2SP tlog-checkpoint
// (https://c2sp.org/tlog-checkpoint), its origin, tree size and root hash.
// hookbus writes no extension lines.
type Checkpoint struct {
	Origin string `json:"origin"`
	Size   uint64 `json:"size"`
	Root   Hash   `json:"root"`
}

// Text is the checkpoint's note text: three lines, origin, size (decimal)
// and root hash (standard base64).
func (c Checkpoint) Text() []byte {
	return []byte(c.Origin + "\n" + strconv.FormatUint(c.Size, 10) + "\n" + c.Root.String() + "\n")
}

// String is "<origin> size <n> root <base64>".
func (c Checkpoint) String() string {
	return fmt.Sprintf("%s size %d root %s", c.Origin, c.Size, c.Root)
}

// parseText reads a checkpoint's note text strictly: a non-empty origin,
// a size without leading zeroes, a 32-byte root; extension lines are
// ignored. (An empty tree's root must be EmptyRoot: the witness checks.)
func parseText(text string) (Checkpoint, error) {
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 || lines[0] == "" {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint: want an origin, a size and a root hash, one a line", ErrMalformed)
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != lines[1] {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint: tree size %q", ErrMalformed, lines[1])
	}
	root, err := ParseHash(lines[2])
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint: root hash: %w", ErrMalformed, err)
	}
	return Checkpoint{Origin: lines[0], Size: size, Root: root}, nil
}

// Sign signs the checkpoint as a note with s (the log's key, named after
// the origin) and returns the signed note.
func (c Checkpoint) Sign(s note.Signer) ([]byte, error) {
	if s.Name() != c.Origin {
		return nil, fmt.Errorf("%w: the key is named %q, the checkpoint's origin is %q", ErrKey, s.Name(), c.Origin)
	}
	return note.Sign(&note.Note{Text: string(c.Text())}, s)
}

// Cosignature is a witness' verified cosignature of a checkpoint.
type Cosignature struct {
	Name string    `json:"name"`
	Time time.Time `json:"time"`
}

// Signed is a checkpoint read from a signed note: the log's signature
// verified, and the cosignatures of the witness keys given.
type Signed struct {
	Checkpoint
	// Note is the signed note as read, every signature line included.
	Note []byte `json:"note"`
	// Cosigned lists the given witnesses whose cosignatures verified.
	Cosigned []Cosignature `json:"cosigned,omitempty"`
}

// OpenCheckpoint reads a signed checkpoint and verifies the log's
// signature with logKey, whose name must be the checkpoint's origin. Each
// witness key whose name and key id a signature line carries must verify
// it; signatures of keys not given are ignored (a witness not given is not
// an error: see RequireCosigned). The error wraps ErrMalformed or
// ErrSignature.
func OpenCheckpoint(signed []byte, logKey note.Verifier, witnesses ...note.Verifier) (*Signed, error) {
	n, err := note.Open(signed, note.VerifierList(append([]note.Verifier{logKey}, witnesses...)...))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			return nil, fmt.Errorf("%w: the checkpoint carries no signature by %s", ErrSignature, logKey.Name())
		case errors.As(err, &invalid):
			return nil, fmt.Errorf("%w: %v", ErrSignature, err)
		}
		return nil, fmt.Errorf("%w: checkpoint note: %v", ErrMalformed, err)
	}
	c, err := parseText(n.Text)
	if err != nil {
		return nil, err
	}
	if c.Origin != logKey.Name() {
		return nil, fmt.Errorf("%w: the checkpoint's origin %q is not the key's name %q", ErrSignature, c.Origin, logKey.Name())
	}
	out := &Signed{Checkpoint: c, Note: bytes.Clone(signed)}
	logSigned := false
	for _, s := range n.Sigs {
		if s.Name == logKey.Name() && s.Hash == logKey.KeyHash() {
			logSigned = true
			continue
		}
		t, err := tnote.CoSigV1Timestamp(s)
		if err != nil {
			return nil, fmt.Errorf("%w: the cosignature by %s: %v", ErrMalformed, s.Name, err)
		}
		out.Cosigned = append(out.Cosigned, Cosignature{Name: s.Name, Time: t.UTC()})
	}
	if !logSigned {
		return nil, fmt.Errorf("%w: the checkpoint carries no signature by %s", ErrSignature, logKey.Name())
	}
	return out, nil
}

// CosignedBy reports whether a witness named name cosigned the checkpoint
// (with a key given to OpenCheckpoint).
func (s *Signed) CosignedBy(name string) bool {
	return slices.ContainsFunc(s.Cosigned, func(c Cosignature) bool { return c.Name == name })
}

// RequireCosigned returns an error wrapping ErrSignature naming the
// witnesses that did not cosign the checkpoint.
func (s *Signed) RequireCosigned(witnesses ...note.Verifier) error {
	var missing []string
	for _, w := range witnesses {
		if !s.CosignedBy(w.Name()) {
			missing = append(missing, w.Name())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: checkpoint of size %d is not cosigned by %s", ErrSignature, s.Size, strings.Join(missing, ", "))
	}
	return nil
}

// NoteText returns a signed note's text (what its signatures sign), or
// the whole input when it has no signature block.
func NoteText(signed []byte) []byte {
	if i := bytes.Index(signed, []byte("\n\n")); i >= 0 {
		return signed[:i+1]
	}
	return signed
}

// WithSignatures returns the signed note with signature lines added (each
// "— <name> <base64>\n"), skipping lines it already carries.
func WithSignatures(signed []byte, lines []byte) []byte {
	out := bytes.Clone(signed)
	for _, l := range strings.SplitAfter(string(lines), "\n") {
		if strings.TrimSpace(l) == "" || bytes.Contains(out, []byte(l)) {
			continue
		}
		if !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		out = append(out, l...)
	}
	return out
}

// PeekCheckpoint reads a signed checkpoint without verifying any
// signature, and the names of the keys that signed it: what to show before
// the log's key is known. Trust nothing it says.
func PeekCheckpoint(signed []byte) (Checkpoint, []string, error) {
	text := NoteText(signed)
	c, err := parseText(string(text))
	if err != nil {
		return Checkpoint{}, nil, err
	}
	var names []string
	for _, l := range strings.Split(string(signed[len(text):]), "\n") {
		if rest, ok := strings.CutPrefix(l, "— "); ok {
			if name, _, ok := strings.Cut(rest, " "); ok {
				names = append(names, name)
			}
		}
	}
	return c, names, nil
}
