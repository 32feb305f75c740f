package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/header"
	"github.com/hookbus/hookbus/bus/internal/wakeup"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// migrateRuns makes the runs stream again when an older hookbus made it
// with message schedules (and the subjects of queued answers and wake-ups):
// JetStream cannot turn schedules off on a stream, and while they are on,
// whoever may publish to the stream can schedule a run request
// (docs/SECURITY.md). The stream's run requests are copied into the new
// one (headers and Nats-Msg-Id kept), its scheduled wake-ups are scheduled
// again in the wakes stream, and the answers it still queued (an older
// client's) are dropped, each named in a warning: give them again
// (observer approve). Run it with the workers stopped: a request taken
// while the stream is made again may run twice. It returns an error
// wrapping ErrProvision.
func (b *Bus) migrateRuns(ctx context.Context) error {
	st, err := b.js.Stream(ctx, b.names.Runs)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: stream %s: %w", ErrProvision, b.names.Runs, deadline.Err(ctx, err))
	}
	info := st.CachedInfo()
	if !info.Config.AllowMsgSchedules {
		return nil
	}
	var runs []*nats.Msg
	var wakes []events.Wake
	dropped := 0
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%w: stream %s: read message %d to copy it: %w", ErrProvision, b.names.Runs, seq, deadline.Err(ctx, err))
		}
		switch {
		case strings.HasPrefix(m.Subject, strings.TrimSuffix(b.subj.AllRuns(), ">")):
			msg := &nats.Msg{Subject: m.Subject, Header: nats.Header{}, Data: m.Data}
			for k, v := range m.Header {
				if !strings.HasPrefix(k, "Nats-Expected") {
					msg.Header[k] = v
				}
			}
			runs = append(runs, msg)
		case strings.HasPrefix(m.Subject, strings.TrimSuffix(b.subj.AllWakes(), ">")):
			if w, ok := oldWake(m); ok {
				wakes = append(wakes, w)
				continue
			}
			fallthrough
		default:
			dropped++
			b.log.Warn("hookbus: a queued answer of an older hookbus is dropped with its stream: give it again (observer approve|reject)",
				"stream", b.names.Runs, "subject", m.Subject, "answer", header.OneLine(string(m.Data), 300))
		}
	}
	if err := b.js.DeleteStream(ctx, b.names.Runs); err != nil {
		return fmt.Errorf("%w: stream %s: delete it to make it again without message schedules: %w", ErrProvision, b.names.Runs, deadline.Err(ctx, err))
	}
	for _, cfg := range b.StreamConfigs() {
		if cfg.Name != b.names.Runs && cfg.Name != b.names.Wakes {
			continue
		}
		if _, err := b.js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("%w: stream %s: %w", ErrProvision, cfg.Name, deadline.Err(ctx, err))
		}
	}
	for _, m := range runs {
		if _, err := b.js.PublishMsg(ctx, m); err != nil {
			return fmt.Errorf("%w: stream %s: copy a run request (%s): %w", ErrProvision, b.names.Runs, m.Header.Get(jetstream.MsgIDHeader), deadline.Err(ctx, err))
		}
	}
	for _, w := range wakes {
		msg, at, err := wakeup.Msg(b.subj, w)
		if err == nil {
			if _, perr := b.js.PublishMsg(ctx, msg); perr != nil {
				err = fmt.Errorf("%w: wake-up of run %s at %s: %w", ErrPublish, w.RunID, at.Format(time.RFC3339), deadline.Err(ctx, perr))
			}
		}
		if err != nil {
			return fmt.Errorf("%w: reschedule the wake-up of run %s: %w", ErrProvision, w.RunID, err)
		}
	}
	b.log.Warn("hookbus: the runs stream was made again without message schedules",
		"stream", b.names.Runs, "run_requests", len(runs), "wake_ups", len(wakes), "answers_dropped", dropped)
	return nil
}

// oldWake reads a wake-up an older hookbus scheduled in the runs stream:
// its body is an answer {"run_id","session_id","answer":{"action":"expire"}}
// on <prefix>.wake.<agent>.<run>, due at its Nats-Schedule.
func oldWake(m *jetstream.RawStreamMsg) (events.Wake, bool) {
	var body struct {
		RunID     string `json:"run_id"`
		SessionID string `json:"session_id"`
	}
	at, ok := strings.CutPrefix(m.Header.Get("Nats-Schedule"), "@at ")
	if !ok || json.Unmarshal(m.Data, &body) != nil {
		return events.Wake{}, false
	}
	t, err := time.Parse(time.RFC3339, at)
	parts := strings.Split(m.Subject, ".")
	if err != nil || len(parts) < 2 {
		return events.Wake{}, false
	}
	w := events.Wake{RunID: body.RunID, AgentID: parts[len(parts)-2], SessionID: body.SessionID, At: t}
	return w, w.Validate() == nil && parts[len(parts)-1] == body.RunID
}
