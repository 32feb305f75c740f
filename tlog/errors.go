package tlog

import "errors"

var (
	// ErrMalformed: a leaf, checkpoint, record, proof or witness request
	// that does not parse, or whose parts do not fit together (a compact
	// range of the wrong length). Returned by ParseLeaf, ParseHash,
	// NewRange, NewTree, OpenCheckpoint, ParseRecord, ParseProof and the
	// witness.
	ErrMalformed = errors.New("tlog: malformed")
	// ErrNotHeld: a Tree asked for a root, range or proof it cannot
	// compute: a size beyond it, or before the first leaf it holds.
	ErrNotHeld = errors.New("tlog: not held by the tree")
	// ErrProof: an inclusion or consistency proof that does not verify
	// (VerifyInclusion, VerifyConsistency, VerifyProof, the witness).
	ErrProof = errors.New("tlog: proof does not verify")
	// ErrSignature: a checkpoint not signed by the key given, or whose
	// signature does not verify (OpenCheckpoint), or that lacks a
	// cosignature required (Checkpoint.RequireCosigners, VerifyProof).
	ErrSignature = errors.New("tlog: signature")
	// ErrIncomplete: a proof that holds, but not of the whole run: events
	// left out, entries duplicated, or no end (VerifyProof, which also
	// returns its result, the findings named).
	ErrIncomplete = errors.New("tlog: the proof is not of the whole run")
	// ErrKey: a signer or verifier key that cannot be read (ReadSigner,
	// ReadVerifier, GenerateKey).
	ErrKey = errors.New("tlog: key")
	// ErrLocked: OpenWitness on a state directory another witness holds.
	ErrLocked = errors.New("tlog: witness state is in use")

	// errNoNode: a tree asked for a node it does not hold (wrapped in
	// ErrNotHeld).
	errNoNode = errors.New("node not held")
)
