// Package tlog makes the events stream a transparency log: an RFC 6962
// Merkle tree whose leaves are the stream's messages in stream order, signed
// checkpoints of it (C2SP tlog-checkpoint, Go's checksum database's note
// signatures), inclusion and consistency proofs, and the rule of a witness
// that cosigns a checkpoint only if it extends the last one it cosigned
// (C2SP tlog-witness). A run's hash chain shows what changed inside a run;
// the tree shows what the chain cannot: a whole run deleted, the stream's
// tail cut, a history rewritten and signed again, another stream in its
// place.
//
// It does no I/O on NATS and imports no NATS client: package tlog/tlogbus
// runs the checkpointer, the witness and the verifications over a bus. What
// is here is what an outsider needs to check a proof offline.
//
//   - Leaves: Entry, EventForm, MessageForm, GapLeaf, HashLeaf (the exact
//     form is in docs/PROTOCOL.md, "Checkpoints"); ParseLeaf reads one back.
//   - Tree: a tree that holds its leaves from some index on and, before it,
//     only a compact range (what is left once the oldest events expired):
//     roots, ranges, inclusion and consistency proofs, built on
//     github.com/transparency-dev/merkle.
//   - Checkpoint, OpenCheckpoint, PeekCheckpoint; keys: GenerateKey,
//     ReadSigner, ReadCosigner, ParseVerifier, ParseWitnessVerifier.
//   - Record: a checkpoint as the checkpoints stream stores it, with its
//     compact range and its window's leaf hashes; Log checks the stored ones
//     against each other.
//   - Verification: the stream, message by message, against the log; a
//     StreamVerdict of Findings (removed, truncated, altered, inserted,
//     replaced, ...).
//   - Proof, NewProof, VerifyProof: a run's events proven offline.
//   - Witness: the cosigner's state and rule (AddCheckpoint).
//   - SaveCheckpoint, ReadSavedCheckpoint: a checkpoint kept in a file
//     (the checkpointer's state); LogStart: an operator's decision to
//     start a new log over one, as its first record holds it.
//
// Checking a proof needs only the log's verifier key:
//
//	res, err := tlog.VerifyProof(data, logKey)
//	// res.Events are the run's events, each included at its stream sequence
//	// under the signed checkpoint; res.Signer signed the run's end.
package tlog
