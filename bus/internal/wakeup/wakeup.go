// Package wakeup builds the message that schedules a waiting run's wake-up
// in the wakes stream: a JetStream message schedule on
// <prefix>.wake.<agent>.<run>, delivered on <prefix>.wake.<agent>.<run>.due
// when it is due (docs/PROTOCOL.md, "Approvals"). bus/runs schedules
// wake-ups with it, and bus' provisioning schedules again those an older
// hookbus left in the runs stream.
package wakeup

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// DueTTL is how long a due wake-up stays in the wakes stream for the
// workers to take (Nats-Schedule-TTL of its schedule).
const DueTTL = 30 * 24 * time.Hour

// Msg returns the message that schedules w at w.At rounded up to the second
// (never before w.At), and that time. The error wraps events' errors for a
// bad wake-up or ids.
func Msg(subj events.Subjects, w events.Wake) (*nats.Msg, time.Time, error) {
	if err := w.Validate(); err != nil {
		return nil, time.Time{}, err
	}
	subject, err := subj.Wake(w.AgentID, w.RunID)
	if err != nil {
		return nil, time.Time{}, err
	}
	target, err := subj.WakeDue(w.AgentID, w.RunID)
	if err != nil {
		return nil, time.Time{}, err
	}
	at := w.At.UTC().Truncate(time.Second)
	if at.Before(w.At) {
		at = at.Add(time.Second) // never before w.At
	}
	w.At = at
	body, err := json.Marshal(w)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: %v", events.ErrPayload, err)
	}
	return &nats.Msg{Subject: subject, Data: body, Header: nats.Header{
		"Nats-Schedule":        []string{"@at " + at.Format(time.RFC3339)},
		"Nats-Schedule-Target": []string{target},
		"Nats-Schedule-TTL":    []string{DueTTL.String()},
	}}, at, nil
}
