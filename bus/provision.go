package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamConfigs returns the configurations Provision applies to the events,
// runs, wakes, dead-letter, checkpoints, usage and counters streams, for review or for
// provisioning by other means (nats CLI, Terraform).
func (b *Bus) StreamConfigs() []jetstream.StreamConfig {
	o := b.opts
	return []jetstream.StreamConfig{{
		Name:        b.names.Events,
		Description: "hookbus events: the audit trail and the sessions' source of truth",
		Subjects:    []string{b.subj.AllEvents()},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    o.replicas,
		MaxAge:      o.eventsMaxAge,
		Duplicates:  o.duplicateWindow,
		Discard:     jetstream.DiscardOld,
	}, {
		Name:        b.names.Runs,
		Description: "hookbus run requests: a work queue consumed by loop workers",
		Subjects:    []string{b.subj.AllRuns()},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    o.replicas,
		Duplicates:  o.duplicateWindow,
		// No message schedules here: a schedule turns a publish on any
		// subject of the stream into a message on another, so whoever may
		// publish to the stream could start runs (docs/SECURITY.md).
	}, {
		Name:        b.names.Wakes,
		Description: "hookbus wake-ups of runs waiting for approval (message schedules, written by loop workers only)",
		Subjects:    []string{b.subj.AllWakes()},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    o.replicas,
		Duplicates:  o.duplicateWindow,
		Discard:     jetstream.DiscardOld,
		// A waiting run's expiry is a message scheduled on its wake
		// subject, delivered on <subject>.due when it is due (a schedule's
		// target is a subject of its own stream). Due wake-ups expire by
		// their TTL (DueTTL); a later schedule of a run replaces the
		// earlier (the server rolls up a schedule's subject).
		AllowMsgSchedules: true,
		AllowMsgTTL:       true,
		AllowRollup:       true,
	}, {
		Name:        b.names.DeadLetters,
		Description: "hookbus dead letters: events an observer failed to handle",
		Subjects:    []string{b.subj.AllDeadLetters()},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    o.replicas,
		Duplicates:  o.duplicateWindow,
	}, {
		Name:        b.names.Checkpoints,
		Description: "hookbus checkpoints: the signed Merkle tree heads of the events stream (written by the checkpointer only)",
		Subjects:    []string{b.subj.Checkpoint()},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    o.replicas,
		Duplicates:  o.duplicateWindow,
		// No limits: a checkpoint keeps what proving the events needs once
		// they expire. A checkpoint is never deleted nor purged (JetStream
		// refuses to turn these off once set).
		DenyDelete: true,
		DenyPurge:  true,
	}, {
		Name:        b.names.Usage,
		Description: "hookbus shared budgets' use: one record per model call charged (append only)",
		Subjects:    []string{strings.TrimSuffix(UsageSubject(b.subj, "*", ""), "*") + ">"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    o.replicas,
		Discard:     jetstream.DiscardOld,
		// What the budgets counted is added to, never taken from: no
		// roll-up, purge or delete (JetStream refuses to turn these off
		// once set). No limits: give it a max age longer than the
		// longest budget period if it grows too large.
		DenyDelete: true,
		DenyPurge:  true,
	}, b.countersConfig()}
}

// CountersMaxAge is how long the counters stream keeps a counter after its
// last change (the stream's MaxAge): the longest window a policy's counter
// may count over (bus/history refuses a longer one).
const CountersMaxAge = 32 * 24 * time.Hour

// countersConfig is the stream of policies' fleet-wide counters: JetStream
// counters (each message's value is its subject's running total, added to
// with a Nats-Incr header), one subject per window slot, only the last
// message of a subject kept, gone CountersMaxAge after a slot's last
// change.
func (b *Bus) countersConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              b.names.Counters,
		Description:       "hookbus policies' fleet-wide counters (JetStream counters, one subject per window slot)",
		Subjects:          []string{CountersSubject(b.subj) + ".>"},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          b.opts.replicas,
		MaxAge:            CountersMaxAge,
		MaxMsgsPerSubject: 1,
		Discard:           jetstream.DiscardOld,
		AllowMsgCounter:   true,
		// What is counted is not taken back by a purge or a delete
		// (JetStream refuses to turn these off once set).
		DenyDelete: true,
		DenyPurge:  true,
	}
}

// Provision creates or updates the streams, the KV buckets (hooks registry,
// trust grants, shared budgets, decision cache, agent definitions, live
// workers) and the object store (large payloads). It is idempotent: it
// works on a fresh server and on one provisioned before, and updates
// settings that changed (replicas, max age, duplicate window) where
// JetStream allows it. A runs stream made by an older hookbus (with
// message schedules, which JetStream cannot turn off) is made again
// (migrateRuns). It returns an error wrapping ErrProvision that names
// the asset that failed.
func (b *Bus) Provision(ctx context.Context) error {
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	if err := b.migrateRuns(ctx); err != nil {
		return err
	}
	for _, cfg := range b.StreamConfigs() {
		if _, err := b.js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("%w: stream %s: %w", ErrProvision, cfg.Name, deadline.Err(ctx, err))
		}
	}
	for _, kv := range []jetstream.KeyValueConfig{{
		Bucket:      b.names.Hooks,
		Description: "hookbus interceptor registry",
		History:     5,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.replicas,
	}, {
		Bucket:      b.names.Trust,
		Description: "hookbus operator decisions: trust grants (privileged_hooks), the kill switch, budget limits; written by the admin only",
		History:     5,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.replicas,
	}, {
		Bucket:      b.names.Budgets,
		Description: "hookbus shared budgets' reservations and use (the limits are in the trust bucket)",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.replicas,
	}, b.decisionCacheConfig(), b.agentsConfig(), b.workersConfig(), b.leasesConfig()} {
		if _, err := b.js.CreateOrUpdateKeyValue(ctx, kv); err != nil {
			return fmt.Errorf("%w: key-value bucket %s: %w", ErrProvision, kv.Bucket, deadline.Err(ctx, err))
		}
		if err := b.bucketRules(ctx, "KV_"+kv.Bucket); err != nil {
			return err
		}
	}
	if _, err := b.js.CreateOrUpdateStream(ctx, b.PayloadsConfig()); err != nil {
		return fmt.Errorf("%w: object store %s: %w", ErrProvision, b.names.Payloads, deadline.Err(ctx, err))
	}
	if err := b.moveOperatorState(ctx); err != nil {
		return err
	}
	b.log.Debug("hookbus provisioned", "events", b.names.Events, "runs", b.names.Runs, "dlq", b.names.DeadLetters)
	return nil
}

// DecisionCacheMaxAge is the longest any entry of the decision bucket lives
// (the bucket's MaxAge): remote.DecisionCache.Put refuses a longer TTL,
// and the server removes older entries whatever TTL their writer gave them
// (but "never": readers bound an entry's age themselves, see prompt's
// Cache).
const DecisionCacheMaxAge = 24 * time.Hour

// DecisionCacheMarkerTTL is how long the decision bucket keeps the marker
// of an expired entry (LimitMarkerTTL; JetStream needs markers for per-key
// TTLs).
const DecisionCacheMarkerTTL = time.Minute

// decisionCacheConfig is the decision cache bucket Provision creates.
func (b *Bus) decisionCacheConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:         b.names.Decisions,
		Description:    "hookbus decision cache of prompt hooks (entries expire by their own TTL)",
		History:        1,
		Storage:        jetstream.FileStorage,
		Replicas:       b.opts.replicas,
		TTL:            DecisionCacheMaxAge,
		LimitMarkerTTL: DecisionCacheMarkerTTL,
	}
}

// PresenceTTL is how long the workers bucket keeps a worker's entry after
// its last heartbeat (the bucket's max age): a worker of bus/runs that dies
// leaves the fleet by itself, within PresenceTTL.
const PresenceTTL = 4 * time.Second

// LeaseTTL is how long the leases bucket keeps a plugin instance's lease
// after its last renewal (the bucket's max age): the registrations of a
// plugin that dies stop being called within LeaseTTL (bus/remote.Lease).
const LeaseTTL = 4 * time.Second

// LeaseMarkerTTL is how long the leases bucket keeps the marker of an
// expired lease, which is how watchers learn that a lease ended.
const LeaseMarkerTTL = time.Minute

// agentsConfig is the bucket of the fleet's agent definitions.
func (b *Bus) agentsConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      b.names.Agents,
		Description: "hookbus agent definitions: the one each agent's new runs run on",
		History:     5,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.replicas,
	}
}

// workersConfig is the bucket of the live workers.
func (b *Bus) workersConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      b.names.Workers,
		Description: "hookbus live workers and what they serve (entries expire without a heartbeat)",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.replicas,
		TTL:         PresenceTTL,
	}
}

// leasesConfig is the bucket of the live plugins' leases: an entry expires
// LeaseTTL after its last write, leaving a marker that watchers see.
func (b *Bus) leasesConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:         b.names.Leases,
		Description:    "hookbus leases of live plugins: a leased registration is called while its plugin renews one (entries expire without a renewal)",
		History:        1,
		Storage:        jetstream.FileStorage,
		Replicas:       b.opts.replicas,
		TTL:            LeaseTTL,
		LimitMarkerTTL: LeaseMarkerTTL,
	}
}

// bucketRules sets what Provision keeps on every bucket's stream beyond
// what the key-value API sets:
//
//   - no roll-ups: a writer of one key could otherwise publish with a
//     Nats-Rollup header and empty the whole bucket (every other key and
//     its history). hookbus never purges a key, so nothing it does needs
//     them. A bucket with per-key TTL markers (the decision cache) keeps
//     them: JetStream needs roll-ups for its markers.
//   - no direct gets: a direct get is answered by any replica, one behind
//     the leader among them, so a read of a key could miss its latest
//     value on a cluster. Without them a get is answered by the stream's
//     leader (docs/ARCHITECTURE.md, "Reads that see the latest write").
func (b *Bus) bucketRules(ctx context.Context, stream string) error {
	st, err := b.js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("%w: stream %s: %w", ErrProvision, stream, deadline.Err(ctx, err))
	}
	cfg := st.CachedInfo().Config
	rollups := cfg.AllowRollup && cfg.SubjectDeleteMarkerTTL == 0
	if !rollups && !cfg.AllowDirect {
		return nil
	}
	if rollups {
		cfg.AllowRollup = false
	}
	cfg.AllowDirect = false
	if _, err := b.js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("%w: stream %s: refuse roll-ups and direct gets: %w", ErrProvision, stream, deadline.Err(ctx, err))
	}
	return nil
}

// PayloadsConfig is the stream of the payloads object store (large
// payloads, the claim check) as Provision makes it: the object store's
// layout (chunks and descriptions, read by nats.go's object store), with
// no roll-up, no purge and no message delete. What an event points to is
// removed only by the stream's age limit (the events' own), never by a
// writer. JetStream refuses to turn deny_delete and deny_purge off once
// set.
func (b *Bus) PayloadsConfig() jetstream.StreamConfig {
	p := b.names.Payloads
	return jetstream.StreamConfig{
		Name:        "OBJ_" + p,
		Description: "hookbus large payloads (claim check)",
		Subjects:    []string{"$O." + p + ".C.>", "$O." + p + ".M.>"},
		Storage:     jetstream.FileStorage,
		Replicas:    max(b.opts.replicas, 1),
		MaxAge:      b.opts.eventsMaxAge,
		MaxBytes:    -1,
		Discard:     jetstream.DiscardNew,
		AllowDirect: true,
		DenyDelete:  true,
		DenyPurge:   true,
	}
}

// operatorKeys are the keys of operator decisions an older hookbus kept in
// buckets the workers write: the kill switch in the registry, budget
// limits in the budgets bucket.
func (b *Bus) operatorKeys() []struct{ bucket, prefix string } {
	return []struct{ bucket, prefix string }{{b.names.Hooks, "disabled."}, {b.names.Budgets, "limit."}}
}

// moveOperatorState moves the operator's decisions an older hookbus kept
// where the workers may write (the kill switch's disabled.* keys of the
// registry, the limit.* keys of the budgets bucket) to the trust bucket,
// which only the admin writes, each under the same key, and deletes them
// from the old place. A key already in the trust bucket is kept there
// (the old one is only deleted). Each move is logged.
func (b *Bus) moveOperatorState(ctx context.Context) error {
	trust, err := b.js.KeyValue(ctx, b.names.Trust)
	if err != nil {
		return fmt.Errorf("%w: key-value bucket %s: %w", ErrProvision, b.names.Trust, deadline.Err(ctx, err))
	}
	for _, o := range b.operatorKeys() {
		fail := func(what string, err error) error {
			return fmt.Errorf("%w: key-value bucket %s: move %s to %s: %w", ErrProvision, o.bucket, what, b.names.Trust, deadline.Err(ctx, err))
		}
		old, err := b.js.KeyValue(ctx, o.bucket)
		if err != nil {
			return fail(o.prefix+"*", err)
		}
		lister, err := old.ListKeysFiltered(ctx, o.prefix+">")
		if err != nil {
			return fail(o.prefix+"*", err)
		}
		var keys []string
		for k := range lister.Keys() {
			keys = append(keys, k)
		}
		for _, key := range keys {
			e, err := old.Get(ctx, key)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return fail(key, err)
			}
			if _, err := trust.Create(ctx, key, e.Value()); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
				return fail(key, err)
			}
			if err := old.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil {
				return fail(key, err)
			}
			b.log.Warn("hookbus provision: operator decision moved to the trust bucket", "key", key, "from", o.bucket, "to", b.names.Trust)
		}
	}
	return nil
}
