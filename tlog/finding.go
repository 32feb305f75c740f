package tlog

import "fmt"

// Kinds of Finding. Which fail a verification is one rule (Finding.Fails):
// everything fails but expired, unverifiable and unchecked, which are
// notes, and unwitnessed, which fails when witnesses are required.
// docs/PROTOCOL.md ("Checkpoints") has the table.
const (
	// FindRemoved: messages the checkpoint covers are no longer in the
	// stream (deleted), or a copy of the stream lacks them (its later
	// messages renumbered).
	FindRemoved = "removed"
	// FindTruncated: the stream ends before the last messages the
	// checkpoint covers.
	FindTruncated = "truncated"
	// FindAltered: a message is not the one checkpointed at its sequence.
	FindAltered = "altered"
	// FindInserted: a message stands where the checkpoint recorded that
	// none was.
	FindInserted = "inserted"
	// FindReplaced: no message of the stream is the one checkpointed at
	// its sequence: the stream is another one.
	FindReplaced = "replaced"
	// FindNotProven: the stream as read does not produce a checkpoint's
	// root (and no finding above says where it differs: its leaves are
	// not stored).
	FindNotProven = "not_proven"
	// FindBadCheckpoint: a stored checkpoint that does not read back or
	// does not fit its own stored leaves.
	FindBadCheckpoint = "bad_checkpoint"
	// FindInconsistent: two checkpoints that no append-only log could
	// both have signed (a consistency proof fails, or one size has two
	// roots).
	FindInconsistent = "inconsistent"
	// FindMissingCheckpoint: a stored checkpoint extends one the
	// checkpoints stream does not hold, or the checkpoint given is newer
	// than every stored one.
	FindMissingCheckpoint = "missing_checkpoint"
	// FindUnwitnessed: the checkpoint lacks a required witness'
	// cosignature.
	FindUnwitnessed = "unwitnessed"
	// FindExpired: the stream's oldest messages are gone, as its retention
	// limits remove them (a note).
	FindExpired = "expired"
	// FindUnverifiable: a message whose leaf cannot be recomputed (a
	// claim-checked event whose data is gone and whose reference names no
	// hash); its stored leaf is taken as it is (a note).
	FindUnverifiable = "unverifiable"
	// FindUnchecked: messages newer than the checkpoint (a note).
	FindUnchecked = "unchecked"
	// FindTrustsServer: the checkpoint proven is the latest the server
	// holds, no witness cosigned it and none was saved: whoever runs the
	// server could have replaced the stream and the checkpoints both (a
	// note).
	FindTrustsServer = "trusts_server"
	// FindNewLog: a stored checkpoint starts a new log over a previous one
	// its checkpointer had signed, by an operator's decision it records
	// (a note: compare with the checkpoints kept of the previous log).
	FindNewLog = "new_log"
)

// Kinds of Finding of a run's proof (VerifyProof): each fails it.
const (
	// FindLeftOut: events of the run are not in the proof (its run
	// sequence numbers skip, or an event's predecessor is absent).
	FindLeftOut = "left_out"
	// FindNoEnd: the proof holds no end of the run (run.completed or
	// run.failed).
	FindNoEnd = "no_end"
	// FindDuplicate: an entry or an event is in the proof more than once.
	FindDuplicate = "duplicate"
)

// Finding is one thing a verification of the stream against checkpoints
// found, over stream sequences First to Last (inclusive; 0 when it is
// about checkpoints rather than messages).
type Finding struct {
	Kind   string `json:"kind"`
	First  uint64 `json:"first_seq,omitempty"`
	Last   uint64 `json:"last_seq,omitempty"`
	Detail string `json:"detail"`
	// Fails is set when the finding fails the verification.
	Fails bool `json:"fails,omitempty"`
}

// Seqs is "seq N" or "seqs N-M".
func (f Finding) Seqs() string {
	switch {
	case f.First == 0:
		return ""
	case f.First == f.Last:
		return fmt.Sprintf("seq %d", f.First)
	}
	return fmt.Sprintf("seqs %d-%d", f.First, f.Last)
}

// fails reports whether a finding of kind fails a verification that
// requires witnesses or not.
func fails(kind string, witnessed bool) bool {
	switch kind {
	case FindExpired, FindUnverifiable, FindUnchecked, FindTrustsServer, FindNewLog:
		return false
	case FindUnwitnessed:
		return witnessed
	}
	return true
}
