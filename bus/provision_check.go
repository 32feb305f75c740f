package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/nats-io/nats.go/jetstream"
)

// CheckProvisioned reports whether every stream, bucket and object store
// Provision creates exists, reading only stream information: it is what a
// least-privileged user (a loop worker, an auditor) can do where it may not
// create or update streams. It returns nil when everything is there, an
// error wrapping ErrNotProvisioned that names each missing asset, or the
// error of the first lookup that failed otherwise (for example a permission
// error, which it does not mistake for a missing asset).
func (b *Bus) CheckProvisioned(ctx context.Context) error {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	streams := []string{
		b.names.Events, b.names.Runs, b.names.Wakes, b.names.DeadLetters, b.names.Usage, b.names.Counters,
		"KV_" + b.names.Hooks, "KV_" + b.names.Trust, "KV_" + b.names.Decisions, "KV_" + b.names.Budgets,
		"KV_" + b.names.Agents, "KV_" + b.names.Workers, "KV_" + b.names.Leases, "OBJ_" + b.names.Payloads,
	}
	var missing []string
	for _, name := range streams {
		st, err := b.js.Stream(ctx, name)
		switch {
		case err == nil && name == b.names.Runs:
			if cfg := st.CachedInfo().Config; cfg.AllowMsgSchedules || slices.Contains(cfg.Subjects, b.subj.AllWakes()) {
				missing = append(missing, name+" (provisioned by an older hookbus: with message schedules, which let whoever may publish to it start runs; provision again)")
			}
		case err == nil && name == b.names.Wakes:
			if cfg := st.CachedInfo().Config; !cfg.AllowMsgSchedules {
				missing = append(missing, name+" (without message schedules)")
			}
		case err == nil && name == b.names.Counters:
			if !st.CachedInfo().Config.AllowMsgCounter {
				missing = append(missing, name+" (without message counters)")
			}
		case err == nil && (name == "KV_"+b.names.Decisions || name == "KV_"+b.names.Leases):
			if !st.CachedInfo().Config.AllowMsgTTL {
				missing = append(missing, name+" (without per-key TTLs)")
			}
		case err == nil && strings.HasPrefix(name, "KV_") && st.CachedInfo().Config.AllowRollup && st.CachedInfo().Config.SubjectDeleteMarkerTTL == 0:
			missing = append(missing, name+" (allows roll-ups, which let any writer of one key empty the bucket; provision again)")
		case err == nil && strings.HasPrefix(name, "KV_") && st.CachedInfo().Config.AllowDirect:
			missing = append(missing, name+" (allows direct gets, which replicas behind the leader answer; provision again)")
		case err == nil && name == "OBJ_"+b.names.Payloads && !st.CachedInfo().Config.DenyPurge:
			missing = append(missing, name+" (allows purges and roll-ups, which let a writer erase large payloads; provision again)")
		case err == nil:
		case errors.Is(err, jetstream.ErrStreamNotFound):
			missing = append(missing, name)
		default:
			return fmt.Errorf("hookbus: checking stream %s: %w", name, deadline.Err(ctx, err))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", ErrNotProvisioned, strings.Join(missing, ", "))
	}
	return nil
}
