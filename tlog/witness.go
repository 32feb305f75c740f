package tlog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// A witness (C2SP tlog-witness, https://c2sp.org/tlog-witness) cosigns a
// log's checkpoint only if it is consistent with the last checkpoint of
// that log it cosigned: the log sends the new checkpoint with the size of
// that last one and a consistency proof from it. The witness keeps, per
// log, the last checkpoint it cosigned, durably, and checks and records a
// new one atomically, so two requests can never roll it back.

// Witness statuses: tlog-witness' HTTP status codes, which hookbus' NATS
// binding carries as Nats-Service-Error-Code.
const (
	StatusBadRequest  = 400 // the request does not parse, or its old size exceeds the checkpoint's
	StatusForbidden   = 403 // no valid signature by the log's key
	StatusNotFound    = 404 // a log (origin) the witness does not know
	StatusConflict    = 409 // the old size is not the last cosigned size (the body says it)
	StatusUnprocessed = 422 // the proof does not verify: the checkpoint is not consistent
)

// WitnessError is a refusal of the witness.
type WitnessError struct {
	Status int
	// Size is the size of the last checkpoint cosigned, with
	// StatusConflict.
	Size uint64
	Msg  string
}

func (e *WitnessError) Error() string { return fmt.Sprintf("witness: %d: %s", e.Status, e.Msg) }

// Unwrap matches ErrProof for StatusUnprocessed, ErrSignature for
// StatusForbidden and ErrMalformed for StatusBadRequest.
func (e *WitnessError) Unwrap() error {
	switch e.Status {
	case StatusUnprocessed:
		return ErrProof
	case StatusForbidden, StatusNotFound:
		return ErrSignature
	case StatusBadRequest:
		return ErrMalformed
	}
	return nil
}

// AddCheckpointRequest is the body of an add-checkpoint call: the line
// "old <size>", the consistency proof (one base64 hash a line), an empty
// line, and the signed checkpoint.
func AddCheckpointRequest(oldSize uint64, proof []Hash, signed []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", oldSize)
	for _, h := range proof {
		b.WriteString(h.String())
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.Write(signed)
	return b.Bytes()
}

// parseAddCheckpoint reads an add-checkpoint body.
func parseAddCheckpoint(body []byte) (old uint64, proof []Hash, signed []byte, err error) {
	bad := func(format string, args ...any) error {
		return &WitnessError{Status: StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	if !sc.Scan() {
		return 0, nil, nil, bad("empty request")
	}
	n, ok := strings.CutPrefix(sc.Text(), "old ")
	if old, err = strconv.ParseUint(n, 10, 64); !ok || err != nil || strconv.FormatUint(old, 10) != n {
		return 0, nil, nil, bad("the first line is not \"old <size>\"")
	}
	consumed := len(sc.Text()) + 1
	for sc.Scan() {
		consumed += len(sc.Text()) + 1
		if sc.Text() == "" {
			return old, proof, body[min(consumed, len(body)):], nil
		}
		h, err := ParseHash(sc.Text())
		if err != nil {
			return 0, nil, nil, bad("a proof line is not a base64 hash")
		}
		if proof = append(proof, h); len(proof) > 63 {
			return 0, nil, nil, bad("more than 63 proof lines")
		}
	}
	return 0, nil, nil, bad("no empty line before the checkpoint")
}

// Witness is a witness' state and signer. Its methods are safe for
// concurrent use.
type Witness struct {
	dir    string
	signer note.Signer
	logs   map[string]note.Verifier // by origin
	lock   *os.File

	mu     sync.Mutex
	latest map[string]*Signed // the last cosigned checkpoint, by origin
}

// OpenWitness opens (creating it if need be) a witness' state directory
// and takes an exclusive lock on it: one witness process per state. signer
// cosigns (a cosignature/v1 signer, ReadCosigner); logs are the keys of
// the logs it witnesses, each named after its log's origin. The error
// names what is wrong.
func OpenWitness(dir string, signer note.Signer, logs ...note.Verifier) (*Witness, error) {
	if len(logs) == 0 {
		return nil, fmt.Errorf("%w: a witness needs the key of a log to witness", ErrKey)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	w := &Witness{dir: dir, signer: signer, logs: map[string]note.Verifier{}, lock: lock, latest: map[string]*Signed{}}
	for _, l := range logs {
		w.logs[l.Name()] = l
		b, err := os.ReadFile(w.StatePath(l.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			w.Close()
			return nil, err
		}
		s, err := OpenCheckpoint(b, l)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("the witness' state %s does not read back: %w", w.StatePath(l.Name()), err)
		}
		w.latest[l.Name()] = s
	}
	return w, nil
}

// Close releases the state directory.
func (w *Witness) Close() { unlockDir(w.lock) }

// Name is the witness' key name.
func (w *Witness) Name() string { return w.signer.Name() }

// StatePath is the file holding the last checkpoint the witness cosigned
// for origin (the log's signature and its cosignature): a checkpoint file
// for "observer verify --checkpoint".
func (w *Witness) StatePath(origin string) string {
	sum := sha256.Sum256([]byte(origin))
	return filepath.Join(w.dir, hex.EncodeToString(sum[:])+".checkpoint")
}

// LatestOf returns the last checkpoint cosigned for origin ("": the
// witness' only log) with the log's signature and the witness'
// cosignature, nil when none.
func (w *Witness) LatestOf(origin string) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	if origin == "" && len(w.logs) == 1 {
		for o := range w.logs {
			origin = o
		}
	}
	if s := w.latest[origin]; s != nil {
		return bytes.Clone(s.Note)
	}
	return nil
}

// AddCheckpoint handles an add-checkpoint request: it verifies the
// checkpoint's signature by its log, that the old size is the last size it
// cosigned for that log and that the consistency proof from that
// checkpoint verifies, records the checkpoint (fsync'd) and returns its
// cosignature lines. A refusal is a *WitnessError; a failure to record is
// another error (nothing is cosigned).
func (w *Witness) AddCheckpoint(body []byte) ([]byte, error) {
	old, proof, signed, err := parseAddCheckpoint(body)
	if err != nil {
		return nil, err
	}
	text := NoteText(signed)
	c, err := parseText(string(text))
	if err != nil {
		return nil, &WitnessError{Status: StatusBadRequest, Msg: err.Error()}
	}
	logKey := w.logs[c.Origin]
	if logKey == nil {
		return nil, &WitnessError{Status: StatusNotFound, Msg: fmt.Sprintf("unknown log %q", c.Origin)}
	}
	s, err := OpenCheckpoint(signed, logKey)
	if err != nil {
		return nil, &WitnessError{Status: StatusForbidden, Msg: err.Error()}
	}
	if old > s.Size {
		return nil, &WitnessError{Status: StatusBadRequest, Msg: fmt.Sprintf("old size %d is larger than the checkpoint's %d", old, s.Size)}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var lastSize uint64
	lastRoot := EmptyRoot()
	if last := w.latest[c.Origin]; last != nil {
		lastSize, lastRoot = last.Size, last.Root
	}
	if old != lastSize {
		return nil, &WitnessError{Status: StatusConflict, Size: lastSize, Msg: fmt.Sprintf("the last checkpoint cosigned for %s is of size %d, not %d", c.Origin, lastSize, old)}
	}
	refuse := func(format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		w.evidence(c.Origin, body, msg)
		return &WitnessError{Status: StatusUnprocessed, Msg: msg}
	}
	switch {
	case s.Size == 0 && s.Root != EmptyRoot():
		return nil, refuse("an empty tree's root is the hash of nothing")
	case old == 0 && len(proof) > 0:
		return nil, refuse("a proof from the empty tree must be empty")
	case old == s.Size && s.Root != lastRoot:
		return nil, refuse("the checkpoint of size %d has another root than the one cosigned (%s, %s)", s.Size, s.Root, lastRoot)
	case old > 0 && old < s.Size:
		if err := VerifyConsistency(old, s.Size, proof, lastRoot, s.Root); err != nil {
			return nil, refuse("the checkpoint of size %d is not consistent with the one of size %d cosigned: %v", s.Size, old, err)
		}
	}
	cosigned, err := note.Sign(&note.Note{Text: string(text)}, w.signer)
	if err != nil {
		return nil, err
	}
	lines := cosigned[len(text)+1:] // after the text and the blank line
	stored := WithSignatures(s.Note, lines)
	if err := writeFileSync(w.StatePath(c.Origin), stored); err != nil {
		return nil, fmt.Errorf("witness: record the checkpoint: %w", err)
	}
	s.Note = stored
	w.latest[c.Origin] = s
	return lines, nil
}

// evidence keeps a request the witness refused though its log signed it:
// proof that the log signed two inconsistent checkpoints. Best effort.
func (w *Witness) evidence(origin string, body []byte, why string) {
	dir := filepath.Join(w.dir, "refused")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	sum := sha256.Sum256([]byte(origin))
	name := fmt.Sprintf("%s-%d.txt", hex.EncodeToString(sum[:8]), time.Now().UnixNano())
	_ = writeFileSync(filepath.Join(dir, name), append([]byte("# "+why+"\n"), body...))
}

// writeFileSync replaces path with data durably: a temporary file written
// and fsync'd, renamed over path, and the directory fsync'd.
func writeFileSync(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if err := errors.Join(err, tmp.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
