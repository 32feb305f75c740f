package tlogbus

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/tlog"
)

// EntryOf is a stored message as the tree sees it (tlog.Entry): for a
// hookbus event, its event form over the SHA-256 of its data as stored
// (the message body, or the claim-checked object's content; when the
// object is gone, the hash its hookbus object name carries), then its
// message form; for any other message, its message form. unknown is set
// for a claim-checked event whose object is gone and whose reference names
// no hash: its event form cannot be computed, and a checkpointer gives it
// its message form.
func EntryOf(m *bus.StoredMessage) (e tlog.Entry, unknown bool) {
	msg := func() []byte { return tlog.MessageForm(m.Subject, m.Header, m.Data) }
	ev := m.Event
	if ev == nil {
		return tlog.NewEntry(msg(), nil), false
	}
	var sum [32]byte
	switch h, named := refHash(ev.ID, ev.DataRef); {
	case !m.DataGone:
		sum = sha256.Sum256(ev.Data)
	case named:
		sum = h
	default:
		return tlog.NewEntry(msg(), nil), true
	}
	return tlog.NewEntry(tlog.EventForm(m.Subject, ev, sum), func() [][]byte { return [][]byte{msg()} }), false
}

// refHash reads the data hash a hookbus claim check names:
// "<bucket>/evt/<event id>/<hex SHA-256 of the data>" (bus.ObjectName).
func refHash(id, ref string) ([32]byte, bool) {
	var h [32]byte
	parts := strings.Split(ref, "/")
	if len(parts) != 4 || parts[1] != "evt" || parts[2] != id || len(parts[3]) != 2*len(h) || strings.ToLower(parts[3]) != parts[3] {
		return h, false
	}
	if _, err := hex.Decode(h[:], []byte(parts[3])); err != nil {
		return h, false
	}
	return h, true
}
