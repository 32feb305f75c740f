package tlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// LogStart is an operator's decision to start a log over a previous one (a
// checkpoints stream whose checkpoints are gone, or that does not extend
// the last checkpoint the checkpointer saved), recorded in the new log's
// first checkpoint record.
type LogStart struct {
	// Reason is the operator's, as given.
	Reason string `json:"reason"`
	// Previous is the last checkpoint the checkpointer saved of the
	// previous log (a signed note), empty when it had none.
	Previous string `json:"previous,omitempty"`
	// Decided is when the checkpointer started the new log.
	Decided time.Time `json:"decided"`
}

// SaveCheckpoint replaces the file at path with a signed checkpoint,
// durably (written, fsync'd, renamed over it, its directory fsync'd),
// readable by its owner only; it creates the directory when missing. The
// file is a checkpoint file as "observer verify --checkpoint" reads it.
func SaveCheckpoint(path string, signed []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeFileSync(path, signed)
}

// ReadSavedCheckpoint reads the checkpoint SaveCheckpoint saved at path
// and verifies the log's signature with logKey. It returns nil and no
// error when there is no file. The error wraps ErrMalformed or
// ErrSignature when the file holds no checkpoint of logKey's log.
func ReadSavedCheckpoint(path string, logKey note.Verifier) (*Signed, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s, err := OpenCheckpoint(data, logKey)
	if err != nil {
		return nil, fmt.Errorf("the checkpoint saved in %s: %w", path, err)
	}
	return s, nil
}
