package record

import (
	"encoding/base64"
	"fmt"

	"github.com/hookbus/hookbus/events"
)

// Signer signs the heads of runs' hash chains (an ed25519 key, such as
// an nkey): the public key a verifier reads, and the signature of a
// chain hash.
type Signer interface {
	PublicKey() (string, error)
	Sign(input []byte) ([]byte, error)
}

// Chain is where a run's record stands for its next event: the seq and
// chain hash of its last stored event. Every writer of a run's record (the
// engine, the closing of a run, an answer to an approval, the bridge)
// numbers and chains its events with it (docs/PROTOCOL.md, "Tamper evidence").
type Chain struct {
	// Seq is the seq of the run's last stored event, 0 when it has none.
	Seq uint64
	// Hash is that event's chain hash, "" when it has none.
	Hash string
}

// Next numbers and chains ev after c (the next seq, c's hash as its
// previous) and returns the chain with ev stored last. c itself is
// unchanged: a caller keeps the chain returned once ev is stored.
func (c Chain) Next(ev *events.Event) Chain {
	next, _ := c.NextSigned(ev, nil) // without a signer, nothing fails
	return next
}

// NextSigned is Next, and signs ev with s when it ends the run (a
// terminal stage; s nil leaves it unsigned): its signer and the signature
// of its chain hash, which covers the whole run's chain.
func (c Chain) NextSigned(ev *events.Event, s Signer) (Chain, error) {
	ev.Seq, ev.PrevHash = c.Seq+1, c.Hash
	if ev.Stage.Terminal() && s != nil {
		pub, err := s.PublicKey()
		if err != nil {
			return c, fmt.Errorf("signing key: %w", err)
		}
		ev.Signer = pub
		sig, err := s.Sign([]byte(ev.ChainHash()))
		if err != nil {
			return c, fmt.Errorf("sign the end of run %s: %w", ev.RunID, err)
		}
		ev.Signature = base64.RawURLEncoding.EncodeToString(sig)
	}
	return chainAt(ev), nil
}

// chainAt is where a run's record stands with e stored last: its seq and
// chain hash; the zero Chain for nil.
func chainAt(e *events.Event) Chain {
	if e == nil {
		return Chain{}
	}
	return Chain{Seq: e.Seq, Hash: e.ChainHash()}
}

// Heads is where each run of a session stands: each run's event with the
// largest seq added (its last), whose seq and chain hash the run's next
// event takes (Chain). The zero value is ready; add events in any order.
type Heads struct{ last map[string]*events.Event }

// Add takes e as its run's last event when its seq is larger than that of
// every event of the run added before (an event without a seq never is).
func (h *Heads) Add(e *events.Event) {
	if l := h.last[e.RunID]; e.Seq > 0 && (l == nil || e.Seq > l.Seq) {
		if h.last == nil {
			h.last = map[string]*events.Event{}
		}
		h.last[e.RunID] = e
	}
}

// Last returns run's last event added, nil when none is.
func (h *Heads) Last(run string) *events.Event { return h.last[run] }

// Chain returns where run's record stands for its next event: the seq and
// chain hash of its last event added, the zero Chain when none is.
func (h *Heads) Chain(run string) Chain { return chainAt(h.last[run]) }
