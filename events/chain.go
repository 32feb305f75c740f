package events

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Tamper evidence. Each run's events form a hash chain: every event
// carries (PrevHash) the ChainHash of the run's previous event, in seq
// order, and a signed run's terminal event carries the signer's public key
// and a signature of its own ChainHash, which covers the whole chain. The
// canonical form is documented in docs/PROTOCOL.md ("Tamper evidence") so a
// verifier in another language can recompute it.

// ChainVersion starts the canonical form.
const ChainVersion = "hookbus-chain-v1"

// Canonical returns the canonical form of the event that ChainHash hashes:
// the lines
//
//	hookbus-chain-v1
//	id, type, source, time (RFC 3339, nanoseconds, UTC), subject,
//	agentid, sessionid, runid, step, seq (decimal, unpadded),
//	parentagentid, parentsessionid, parentrunid, prevhash, signer,
//	the SHA-256 of the data (lower-case hex; the data as stored: the
//	message body, or the claim-checked object)
//
// each value percent-encoded as the ce-* headers are (so no value holds a
// newline), each line ended by "\n". The signature is not part of it.
// dataHash is the SHA-256 of the data.
func (e *Event) Canonical(dataHash [32]byte) []byte {
	return e.appendCanonical(make([]byte, 0, canonicalSize), dataHash)
}

// canonicalSize holds the canonical form of a typical event (one without
// a parent run): ChainHash writes it without allocating.
const canonicalSize = 512

// appendCanonical appends e's canonical form to b.
func (e *Event) appendCanonical(b []byte, dataHash [32]byte) []byte {
	b = append(b, ChainVersion+"\n"...)
	for _, s := range [...]string{e.ID, e.Type(), e.Source} {
		b = append(appendPercent(b, s), '\n')
	}
	b = append(e.Time.UTC().AppendFormat(b, time.RFC3339Nano), '\n') // nothing to escape
	for _, s := range [...]string{e.Subject, e.AgentID, e.SessionID, e.RunID} {
		b = append(appendPercent(b, s), '\n')
	}
	b = append(strconv.AppendInt(b, int64(e.Step), 10), '\n')
	b = append(strconv.AppendUint(b, e.Seq, 10), '\n')
	for _, s := range [...]string{e.ParentAgentID, e.ParentSessionID, e.ParentRunID, e.PrevHash, e.Signer} {
		b = append(appendPercent(b, s), '\n')
	}
	return append(hex.AppendEncode(b, dataHash[:]), '\n')
}

// ChainHash is the SHA-256 of the event's canonical form (Canonical), in
// lower-case hex: what the run's next event carries as PrevHash. The
// event's data must be its data as stored (fetched, for a claim-checked
// event).
func (e *Event) ChainHash() string {
	var buf [canonicalSize]byte
	sum := sha256.Sum256(e.appendCanonical(buf[:0], sha256.Sum256(e.Data)))
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}
