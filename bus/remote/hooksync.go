package remote

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go/jetstream"
)

// HookSync keeps a chain's remote interceptors in step with the registry:
// every valid entry whose plugin may use its stage is registered on the
// chain as a Remote client, and changes to the registry and to the grants
// are applied as they happen, so the loop does no lookup per event. Make
// one with SyncHooks and Stop it when done.
type HookSync struct {
	b     *bus.Bus
	chain *interceptors.Chain
	trust *Trust
	log   *slog.Logger
	bw    *kvstore.Watch
	lw    *kvstore.Watch // the leases bucket
	done  chan struct{}

	// Owned by the goroutine that applies changes (SyncHooks' caller until
	// it returns).
	desired  map[string]interceptors.Registration // key → valid entry
	active   map[string]activeHook                // key → registered on the chain
	disabled map[string]interceptors.Disabled     // plugins the kill switch turned off
	leased   map[string]bool                      // key → its entry is leased
	live     map[string]map[string]bool           // plugin → the instances holding a lease

	hooksApplied  *kvstore.Progress // registry revision applied
	leasesApplied *kvstore.Progress // leases revision applied
	trustApplied  *kvstore.Progress // trust revision the registrations reflect

	stopping   atomic.Bool
	unregister sync.Once
}

type activeHook struct {
	reg        interceptors.Registration
	unregister func()
}

// SyncHooks registers the interceptors of b's registry on chain, as
// Clients over b's connection, and keeps them
// in step with it until Stop. trust decides which plugins may use the
// privileged stages: it must be the chain's Trust (build the chain with
// interceptors.WithTrust(trust)), so that the chain and the sync agree.
//
//	trust, err := remote.WatchTrust(ctx, b)
//	chain := interceptors.NewChain(interceptors.WithTrust(trust))
//	hs, err := remote.SyncHooks(ctx, b, chain, trust)
//	defer func() { hs.Stop(); trust.Stop() }()
//
// An entry that does not parse or validate, that names a privileged stage
// without a grant, or that the chain refuses (an in-process interceptor of
// the same plugin on the stage) is skipped with a logged warning. A revoked
// grant unregisters the plugin's privileged registrations; a new grant
// registers them. An entry that changes is unregistered, then registered
// again (at the end of its Order among equals).
//
// SyncHooks returns once the current registry is applied; ctx bounds that
// load. The error wraps ErrInvalidOption for a nil chain or trust, or
// ErrRegistry when the bucket cannot be read.
func SyncHooks(ctx context.Context, b *bus.Bus, chain *interceptors.Chain, trust *Trust) (*HookSync, error) {
	switch {
	case chain == nil:
		return nil, invalid("sync hooks: nil chain")
	case trust == nil:
		return nil, invalid("sync hooks: nil trust (watch the trust bucket with WatchTrust and build the chain WithTrust)")
	}
	ctx, cancel := deadline.Default(ctx, b.Timeout())
	defer cancel()
	kv, err := kvstore.Open(ctx, b.JetStream(), b.Names().Hooks)
	if err != nil {
		return nil, err
	}
	s := &HookSync{
		b: b, chain: chain, trust: trust, log: b.Logger(), done: make(chan struct{}),
		desired: map[string]interceptors.Registration{}, active: map[string]activeHook{},
		leased: map[string]bool{}, live: map[string]map[string]bool{},
	}
	leases, err := kvstore.Open(ctx, b.JetStream(), b.Names().Leases)
	if err != nil {
		return nil, err
	}
	// The leases first: a leased registration is called only while its
	// plugin holds one.
	lw, lrev, err := kvstore.OpenWatch(ctx, leases, b.Names().Leases, func(e jetstream.KeyValueEntry) { s.applyLease(e, true) })
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRegistry, err)
	}
	s.lw = lw
	trustRev, trustChanged, _ := trust.applied.State()
	bw, rev, err := kvstore.OpenWatch(ctx, kv, b.Names().Hooks, s.applyEntry)
	if err != nil {
		lw.Stop()
		s.unregisterAll()
		return nil, fmt.Errorf("%w: %w", ErrRegistry, err)
	}
	s.bw = bw
	s.applyKillSwitch()
	s.hooksApplied, s.trustApplied = kvstore.NewProgress(rev), kvstore.NewProgress(trustRev)
	s.leasesApplied = kvstore.NewProgress(lrev)
	go s.follow(trustChanged)
	return s, nil
}

// follow applies registry and trust changes until the watch ends.
func (s *HookSync) follow(trustChanged <-chan struct{}) {
	defer close(s.done)
	leases := s.lw.Updates()
	for {
		select {
		case e, ok := <-leases:
			if !ok {
				if !s.stopping.Load() {
					s.log.Warn("hookbus hooks: leases watch ended; leased registrations stay as they are", "bucket", s.lw.Bucket())
				}
				s.leasesApplied.End(fmt.Errorf("%w: watch of key-value bucket %s ended", ErrRegistry, s.lw.Bucket()))
				leases = nil
				continue
			}
			if e != nil {
				s.applyLease(e, false)
				s.leasesApplied.Set(e.Revision())
			}
		case e, ok := <-s.bw.Updates():
			if !ok {
				// Stopped, or the connection closed: the registrations stay
				// (a fail-closed one goes on failing closed) until Stop.
				err := fmt.Errorf("%w: watch of key-value bucket %s ended", ErrRegistry, s.bw.Bucket())
				if !s.stopping.Load() {
					s.log.Error("hookbus hooks: registry watch ended; the chain keeps its registrations, no longer updated", "err", err)
				}
				s.hooksApplied.End(err)
				s.trustApplied.End(err)
				return
			}
			if e == nil {
				continue
			}
			s.applyEntry(e)
			s.hooksApplied.Set(e.Revision())
		case <-trustChanged:
			var rev uint64
			var err error
			rev, trustChanged, err = s.trust.applied.State()
			if err != nil { // the trust's watch ended: grants no longer follow the bucket
				s.log.Warn("hookbus hooks: trust watch ended; privileged registrations stay as they are", "err", err)
				s.trustApplied.End(err)
				trustChanged = nil
				continue
			}
			s.applyKillSwitch()
			s.reconcileAll(true)
			s.trustApplied.Set(rev)
		}
	}
}

// applyEntry applies one registry change.
func (s *HookSync) applyEntry(e jetstream.KeyValueEntry) {
	key := e.Key()
	if _, ok := disabledPlugin(key); ok {
		// Where an older hookbus kept the kill switch: bus.Provision moves
		// it to the trust bucket, which only the admin writes.
		if e.Operation() == jetstream.KeyValuePut {
			s.log.Warn("hookbus hooks: kill-switch entry in the registry bucket ignored (provision again to move it to the trust bucket)", "key", key)
		}
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(s.desired, key)
		delete(s.leased, key)
		s.reconcile(key, false)
		return
	}
	s.leased[key] = leasedEntry(e.Value())
	reg, err := decodeEntry(key, e.Value())
	if err != nil {
		s.log.Warn("hookbus hooks: registry entry skipped", "key", key, "revision", e.Revision(), "err", err)
		delete(s.desired, key)
	} else {
		s.desired[key] = reg
	}
	s.reconcile(key, false)
}

// applyLease applies one change of the leases bucket: a plugin that holds
// its first lease has its leased registrations registered, one whose last
// lease ended (released, or expired: the plugin died) unregistered.
func (s *HookSync) applyLease(e jetstream.KeyValueEntry, initial bool) {
	info, ok := decodeLease(e.Key(), e.Value())
	if !ok {
		return
	}
	held := s.live[info.Plugin]
	before := len(held)
	if e.Operation() == jetstream.KeyValuePut {
		if held == nil {
			held = map[string]bool{}
			s.live[info.Plugin] = held
		}
		held[info.Instance] = true
	} else {
		delete(held, info.Instance)
		if len(held) == 0 {
			delete(s.live, info.Plugin)
		}
	}
	after := len(held)
	if initial || (before == 0) == (after == 0) {
		return
	}
	if after == 0 {
		how := "released"
		if e.Operation() == jetstream.KeyValuePurge {
			how = "expired (the plugin stopped renewing it)"
		}
		s.log.Info("hookbus hooks: plugin gone: its last lease "+how+"; its leased registrations are no longer called", "plugin", info.Plugin)
	}
	for key, reg := range s.desired {
		if reg.Plugin == info.Plugin && s.leased[key] {
			s.reconcile(key, false)
		}
	}
	for key, a := range s.active {
		if _, ok := s.desired[key]; !ok && a.reg.Plugin == info.Plugin {
			s.reconcile(key, false)
		}
	}
}

// applyKillSwitch makes the chain's disabled plugins those of the trust
// bucket's kill switch.
func (s *HookSync) applyKillSwitch() {
	want := s.trust.Disabled()
	for plugin, d := range want {
		if cur, ok := s.disabled[plugin]; ok && cur == d {
			continue
		}
		s.chain.Disable(plugin, d)
		s.log.Warn("hookbus hooks: plugin disabled", "plugin", plugin, "by", d.By, "at", d.At, "reason", d.Reason)
	}
	for plugin := range s.disabled {
		if _, ok := want[plugin]; !ok && s.chain.Enable(plugin) {
			s.log.Info("hookbus hooks: plugin enabled", "plugin", plugin)
		}
	}
	s.disabled = want
}

// reconcileAll reconciles every entry (after a trust change).
func (s *HookSync) reconcileAll(trustChange bool) {
	for key := range s.desired {
		s.reconcile(key, trustChange)
	}
	for key := range s.active {
		if _, ok := s.desired[key]; !ok {
			s.reconcile(key, trustChange)
		}
	}
}

// reconcile makes the chain hold key's entry as desired: registered when it
// is valid and its plugin may use its stage, with its current fields.
// trustChange quiets the warnings that a registry change already gave.
func (s *HookSync) reconcile(key string, trustChange bool) {
	want, ok := s.desired[key]
	if ok && s.leased[key] && len(s.live[want.Plugin]) == 0 {
		ok = false // its plugin is gone (or not yet leased)
	}
	if ok && want.Stage.Privileged() && !s.trust.Privileged(want.Plugin) {
		if !trustChange {
			s.log.Warn("hookbus hooks: registration skipped until granted", "key", key,
				"err", fmt.Errorf("%w: plugin %s lacks privileged_hooks permission for stage %s", interceptors.ErrPrivileged, want.Plugin, want.Stage))
		}
		ok = false
	}
	cur, active := s.active[key]
	if active && ok && cur.reg == want {
		return
	}
	if active {
		cur.unregister()
		delete(s.active, key)
		s.log.Info("hookbus hooks: remote interceptor unregistered", "plugin", cur.reg.Plugin, "stage", cur.reg.Stage)
	}
	if !ok {
		return
	}
	unregister, err := Register(s.b, s.chain, want)
	if err != nil {
		s.log.Warn("hookbus hooks: registration skipped", "key", key, "err", err)
		return
	}
	s.active[key] = activeHook{reg: want, unregister: unregister}
	s.log.Info("hookbus hooks: remote interceptor registered", "plugin", want.Plugin, "stage", want.Stage, "order", want.Order)
}

func (s *HookSync) unregisterAll() {
	for key, a := range s.active {
		a.unregister()
		delete(s.active, key)
	}
}

// Synced returns once every change made to the registry and to the trust
// bucket before the call is reflected in the chain. The error wraps
// ErrRegistry when a bucket cannot be read or a watch ended, or ctx's
// error.
func (s *HookSync) Synced(ctx context.Context) error {
	ctx, cancel := deadline.Default(ctx, s.b.Timeout())
	defer cancel()
	hooks, err := kvstore.LastRevision(ctx, s.bw.KV())
	if err != nil {
		return fmt.Errorf("%w: key-value bucket %s: %w", ErrRegistry, s.bw.Bucket(), deadline.Err(ctx, err))
	}
	leases, err := kvstore.LastRevision(ctx, s.lw.KV())
	if err != nil {
		return fmt.Errorf("%w: key-value bucket %s: %w", ErrRegistry, s.lw.Bucket(), deadline.Err(ctx, err))
	}
	if err := s.trust.Synced(ctx); err != nil {
		return err
	}
	trustRev, _, _ := s.trust.applied.State()
	if err := s.hooksApplied.Wait(ctx, hooks); err != nil {
		return err
	}
	if err := s.leasesApplied.Wait(ctx, leases); err != nil {
		return err
	}
	return s.trustApplied.Wait(ctx, trustRev)
}

// Stop stops following the registry and removes the registrations the
// sync made from the chain. It is idempotent.
func (s *HookSync) Stop() {
	s.stopping.Store(true)
	s.bw.Stop()
	s.lw.Stop()
	<-s.done
	s.unregister.Do(s.unregisterAll) // the follower is gone: s.active is ours
}

// Done is closed when the sync no longer follows the registry: after Stop,
// or when its watch ended (the connection closed). In the second case the
// chain keeps the registrations of the moment, so that a policy fail
// registration still fails closed, until Stop removes them.
func (s *HookSync) Done() <-chan struct{} { return s.done }
