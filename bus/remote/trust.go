package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go/jetstream"
)

// grant is the value of a trust bucket entry.
type grant struct {
	PrivilegedHooks bool      `json:"privileged_hooks"`
	GrantedAt       time.Time `json:"granted_at,omitzero"`
}

// grants reports whether a trust entry's value grants privileged_hooks.
func grants(value []byte) bool {
	var g grant
	return json.Unmarshal(value, &g) == nil && g.PrivilegedHooks
}

// Grant grants plugin privileged_hooks: the permission to intercept the
// privileged stages (context.assembled, model.responded). The error wraps
// events.ErrInvalidID for a bad plugin id, ErrRegistry for a bucket failure.
func (r *Registry) Grant(ctx context.Context, plugin string) error {
	if err := kvstore.CheckPluginKey(plugin); err != nil {
		return err
	}
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	value, _ := json.Marshal(grant{PrivilegedHooks: true, GrantedAt: time.Now().UTC()}) // cannot fail
	return r.trust.Put(ctx, plugin, value)
}

// Revoke withdraws plugin's grant. Its registrations on privileged stages
// stay in the registry, and a HookSync unregisters them from its chain
// until the plugin is granted again. The error wraps ErrNotFound when the
// plugin has no grant, events.ErrInvalidID for a bad plugin id, ErrRegistry
// for a bucket failure.
func (r *Registry) Revoke(ctx context.Context, plugin string) error {
	if err := kvstore.CheckPluginKey(plugin); err != nil {
		return err
	}
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	return deleteKey(ctx, r.trust, plugin, "plugin "+plugin+" has no grant")
}

// Granted returns the plugins granted privileged_hooks, sorted. Bucket
// failures wrap ErrRegistry.
func (r *Registry) Granted(ctx context.Context) ([]string, error) {
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	var out []string
	err := r.trust.ReadAll(ctx, func(e jetstream.KeyValueEntry) {
		if !strings.Contains(e.Key(), ".") && grants(e.Value()) { // a plugin id holds no '.'
			out = append(out, e.Key())
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// granted reports whether plugin holds a grant now (one KV read).
func (r *Registry) granted(ctx context.Context, plugin string) (bool, error) {
	kv, err := r.trust.KV(ctx)
	if err != nil {
		return false, err
	}
	e, err := kv.Get(ctx, plugin)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, r.trust.Err(ctx, "get "+plugin+" from", err)
	}
	return grants(e.Value()), nil
}

// Trust is the interceptors.Trust of the trust bucket: a local cache of the
// grants that a KV watch keeps up to date, so Privileged does no I/O. Make
// one with WatchTrust, give it to the chain (interceptors.WithTrust) and to
// SyncHooks, and Stop it when done. It is safe for concurrent use.
type Trust struct {
	log  *slog.Logger
	bw   *kvstore.Watch
	done chan struct{}

	mu       sync.RWMutex
	granted  map[string]struct{}
	disabled map[string]interceptors.Disabled // the kill switch
	applied  *kvstore.Progress
}

var _ interceptors.Trust = (*Trust)(nil)

// WatchTrust loads the grants of b's trust bucket and follows their
// changes until Stop. It returns once the current grants are loaded; ctx
// bounds that load. The error wraps ErrRegistry (a missing bucket means the
// bus was not provisioned).
func WatchTrust(ctx context.Context, b *bus.Bus) (*Trust, error) {
	ctx, cancel := deadline.Default(ctx, b.Timeout())
	defer cancel()
	kv, err := kvstore.Open(ctx, b.JetStream(), b.Names().Trust)
	if err != nil {
		return nil, err
	}
	t := &Trust{log: b.Logger(), granted: map[string]struct{}{}, disabled: map[string]interceptors.Disabled{}, done: make(chan struct{})}
	bw, rev, err := kvstore.OpenWatch(ctx, kv, b.Names().Trust, t.apply)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRegistry, err)
	}
	t.bw, t.applied = bw, kvstore.NewProgress(rev)
	go t.follow()
	return t, nil
}

func (t *Trust) follow() {
	defer close(t.done)
	for e := range t.bw.Updates() {
		if e == nil {
			continue
		}
		t.apply(e)
		t.applied.Set(e.Revision())
	}
	t.applied.End(fmt.Errorf("%w: watch of key-value bucket %s ended", ErrRegistry, t.bw.Bucket()))
}

func (t *Trust) apply(e jetstream.KeyValueEntry) {
	if plugin, ok := disabledPlugin(e.Key()); ok {
		t.mu.Lock()
		defer t.mu.Unlock()
		if e.Operation() == jetstream.KeyValuePut {
			t.disabled[plugin] = decodeDisabled(e.Value())
		} else {
			delete(t.disabled, plugin)
		}
		return
	}
	if strings.Contains(e.Key(), ".") {
		return // not a plugin id: another operator decision (budget limits, policies)
	}
	ok := e.Operation() == jetstream.KeyValuePut && grants(e.Value())
	if e.Operation() == jetstream.KeyValuePut && !ok {
		t.log.Warn("hookbus trust: entry grants nothing", "plugin", e.Key(), "value", string(e.Value()))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ok {
		t.granted[e.Key()] = struct{}{}
	} else {
		delete(t.granted, e.Key())
	}
}

// Privileged reports whether plugin holds a grant, as of the last change
// the watch applied.
func (t *Trust) Privileged(plugin string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, ok := t.granted[plugin]
	return ok
}

// Disabled returns the plugins the kill switch turns off, as of the last
// change the watch applied.
func (t *Trust) Disabled() map[string]interceptors.Disabled {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return maps.Clone(t.disabled)
}

// Plugins returns the granted plugins, sorted.
func (t *Trust) Plugins() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Sorted(maps.Keys(t.granted))
}

// Synced returns once every change made to the trust bucket before the
// call is applied. The error wraps ErrRegistry when the bucket cannot be
// read or the watch ended, or ctx's error.
func (t *Trust) Synced(ctx context.Context) error {
	rev, err := kvstore.LastRevision(ctx, t.bw.KV())
	if err != nil {
		return fmt.Errorf("%w: key-value bucket %s: %w", ErrRegistry, t.bw.Bucket(), deadline.Err(ctx, err))
	}
	return t.applied.Wait(ctx, rev)
}

// Stop ends the watch; Privileged keeps answering from the last grants.
// It is idempotent.
func (t *Trust) Stop() {
	t.bw.Stop()
	<-t.done
}
