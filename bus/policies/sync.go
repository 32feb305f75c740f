package policies

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/policy"
	"github.com/nats-io/nats.go/jetstream"
)

// Syncer keeps a chain's policies in step with the trust bucket: every
// stored policy that compiles here is registered on the chain (its
// Registrations, evaluated in process), and changes are applied as they
// happen, so no decision waits on a lookup. Make one with Sync and Stop it
// when done.
type Syncer struct {
	b      *bus.Bus
	chain  *interceptors.Chain
	opts   []policy.Option
	stages []events.Stage // when set, only the policies matching one of them
	log    *slog.Logger
	bw     *kvstore.Watch
	done   chan struct{}

	applied *kvstore.Progress // trust bucket revision applied

	mu     sync.Mutex        // guards active; held while applying a change
	active map[string]*entry // policy name → registered

	stopping   atomic.Bool
	unregister sync.Once
}

// entry is one policy registered on the chain: its registrations call
// slot, which holds the compiled version in force, so that a new version
// with the same registrations replaces the old one at once, with no
// moment where neither applies.
type entry struct {
	version    string
	regs       []interceptors.Registration
	slot       *slot
	unregister []func()
}

// slot is the interceptor registered for a policy: the version in force.
type slot struct {
	cur atomic.Pointer[interceptors.Interceptor]
}

func (s *slot) set(c *policy.Compiled) {
	ic := c.Interceptor()
	s.cur.Store(&ic)
}

func (s *slot) Intercept(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	return (*s.cur.Load()).Intercept(ctx, req)
}

// BoundByContext: a policy's evaluation returns once its ctx is done (its
// history reads honour ctx).
func (*slot) BoundByContext() {}

// Sync registers the policies stored in b's trust bucket on chain and
// keeps them in step with it until Stop. hist answers the policies'
// history functions and counters (history.New(b) over the bus); with a
// nil hist a policy that reads history or counters is not loaded, with a
// logged error wrapping policy.ErrNoHistory.
//
//	ps, err := policies.Sync(ctx, b, chain, history.New(b))
//	defer ps.Stop()
//
// A stored entry that does not decode or compile here (written by another
// version of hookbus, say) is skipped with a logged error, and the
// version of that policy loaded before, if any, stays in force: a bad
// write never lifts a policy. A deleted policy is unregistered. A new
// version whose registrations are the same replaces the old one at once;
// otherwise the old registrations are removed and the new ones added. A
// registration the chain refuses (a plugin "policy-NAME" already on the
// stage) is skipped with a logged error. Keys of the bucket that are not
// policies (grants, the kill switch, budget limits, test results) are
// ignored.
//
// Sync returns once the stored policies are applied; ctx bounds that
// load. The error wraps ErrInvalidOption for a nil chain, or ErrRegistry
// when the bucket cannot be read.
func Sync(ctx context.Context, b *bus.Bus, chain *interceptors.Chain, hist policy.History, opts ...SyncOption) (*Syncer, error) {
	if chain == nil {
		return nil, invalid("sync policies: nil chain")
	}
	var o syncOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	ctx, cancel := deadline.Default(ctx, b.Timeout())
	defer cancel()
	kv, err := kvstore.Open(ctx, b.JetStream(), b.Names().Trust)
	if err != nil {
		return nil, err
	}
	s := &Syncer{b: b, chain: chain, log: b.Logger(), done: make(chan struct{}), active: map[string]*entry{}, stages: o.stages}
	// The policies read each call once, whichever of them decide on it.
	s.opts = []policy.Option{policy.WithInputs(policy.NewInputs())}
	if hist != nil {
		s.opts = append(s.opts, policy.WithHistory(hist))
	}
	bw, rev, err := kvstore.OpenWatch(ctx, kv, b.Names().Trust, s.apply)
	if err != nil {
		s.unregisterAll()
		return nil, fmt.Errorf("%w: %w", ErrRegistry, err)
	}
	s.bw, s.applied = bw, kvstore.NewProgress(rev)
	go s.follow()
	return s, nil
}

// follow applies changes until the watch ends.
func (s *Syncer) follow() {
	defer close(s.done)
	for e := range s.bw.Updates() {
		if e == nil {
			continue
		}
		s.apply(e)
		s.applied.Set(e.Revision())
	}
	err := fmt.Errorf("%w: watch of key-value bucket %s ended", ErrRegistry, s.bw.Bucket())
	if !s.stopping.Load() {
		s.log.Error("hookbus policies: trust bucket watch ended; the chain keeps its policies, no longer updated", "err", err)
	}
	s.applied.End(err)
}

// apply applies one change of the trust bucket.
func (s *Syncer) apply(e jetstream.KeyValueEntry) {
	name, ok := policyName(e.Key())
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		s.remove(name)
		return
	}
	c, err := s.compile(e)
	if err == nil && c == nil { // not for the stages this sync serves
		s.remove(name)
		return
	}
	if err != nil {
		attrs := []any{"policy", name, "revision", e.Revision(), "err", err}
		if cur, ok := s.active[name]; ok {
			attrs = append(attrs, "in_force", cur.version)
			s.log.Error("hookbus policies: stored policy not loaded; the version loaded before stays in force", attrs...)
		} else {
			s.log.Error("hookbus policies: stored policy not loaded", attrs...)
		}
		return
	}
	s.install(name, c)
}

// compile decodes and compiles a stored policy.
func (s *Syncer) compile(e jetstream.KeyValueEntry) (*policy.Compiled, error) {
	rec, err := decodeRecord(e)
	if err != nil {
		return nil, err
	}
	p, err := rec.Policy()
	if err != nil {
		return nil, err
	}
	if !s.wanted(p) {
		return nil, nil
	}
	c, err := policy.Compile(p, s.opts...)
	if errors.Is(err, policy.ErrNoHistory) {
		return nil, fmt.Errorf("%w (this process has no record of past events to answer from)", err)
	}
	return c, err
}

// wanted reports whether p matches a stage the sync serves.
func (s *Syncer) wanted(p *policy.Policy) bool {
	return len(s.stages) == 0 || slices.ContainsFunc(p.Spec.Match.Stages, func(st events.Stage) bool { return slices.Contains(s.stages, st) })
}

// install registers c, or puts it in force in place of the version loaded
// before.
func (s *Syncer) install(name string, c *policy.Compiled) {
	regs := c.Registrations()
	cur, ok := s.active[name]
	if ok && cur.version == c.Policy().Version {
		return
	}
	if ok && slices.Equal(cur.regs, regs) {
		cur.slot.set(c)
		cur.version = c.Policy().Version
		s.log.Info("hookbus policies: policy updated", "policy", name, "version", cur.version)
		return
	}
	next := &entry{version: c.Policy().Version, regs: regs, slot: &slot{}}
	next.slot.set(c)
	if ok {
		s.remove(name)
	}
	for _, reg := range regs {
		unregister, err := s.chain.Register(reg, next.slot)
		if err != nil {
			s.log.Error("hookbus policies: policy registration skipped", "policy", name, "stage", reg.Stage, "err", err)
			continue
		}
		next.unregister = append(next.unregister, unregister)
	}
	s.active[name] = next
	s.log.Info("hookbus policies: policy loaded", "policy", name, "version", next.version, "mode", c.Policy().Spec.Mode)
}

// remove unregisters the policy name.
func (s *Syncer) remove(name string) {
	cur, ok := s.active[name]
	if !ok {
		return
	}
	for _, u := range cur.unregister {
		u()
	}
	delete(s.active, name)
	s.log.Info("hookbus policies: policy unloaded", "policy", name, "version", cur.version)
}

func (s *Syncer) unregisterAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.active {
		s.remove(name)
	}
}

// Loaded returns the policies in force on the chain: name → version.
func (s *Syncer) Loaded() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.active))
	for name, e := range s.active {
		out[name] = e.version
	}
	return out
}

// Synced returns once every change made to the trust bucket before the
// call is reflected in the chain. The error wraps ErrRegistry when the
// bucket cannot be read or the watch ended, or ctx's error.
func (s *Syncer) Synced(ctx context.Context) error {
	ctx, cancel := deadline.Default(ctx, s.b.Timeout())
	defer cancel()
	rev, err := kvstore.LastRevision(ctx, s.bw.KV())
	if err != nil {
		return fmt.Errorf("%w: key-value bucket %s: %w", ErrRegistry, s.bw.Bucket(), deadline.Err(ctx, err))
	}
	return s.applied.Wait(ctx, rev)
}

// Stop stops following the bucket and removes the policies the sync
// registered from the chain. It is idempotent.
func (s *Syncer) Stop() {
	s.stopping.Store(true)
	s.bw.Stop()
	<-s.done
	s.unregister.Do(s.unregisterAll)
}
