package events

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
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
	fields := [...]string{
		ChainVersion, e.ID, e.Type(), e.Source, e.Time.UTC().Format(time.RFC3339Nano), e.Subject,
		e.AgentID, e.SessionID, e.RunID, strconv.Itoa(e.Step), strconv.FormatUint(e.Seq, 10),
		e.ParentAgentID, e.ParentSessionID, e.ParentRunID, e.PrevHash, e.Signer,
		hex.EncodeToString(dataHash[:]),
	}
	var b strings.Builder
	for i, f := range fields {
		if i > 0 && i < len(fields)-1 {
			f = PercentEncode(f)
		}
		b.WriteString(f)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// ChainHash is the SHA-256 of the event's canonical form (Canonical), in
// lower-case hex: what the run's next event carries as PrevHash. The
// event's data must be its data as stored (fetched, for a claim-checked
// event).
func (e *Event) ChainHash() string {
	sum := sha256.Sum256(e.Canonical(sha256.Sum256(e.Data)))
	return hex.EncodeToString(sum[:])
}
