package remote

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go/jetstream"
)

// Registry is the interceptor registry (KV bucket bus.Names.Hooks, by
// default hookbus_hooks) and the trust grants (bucket bus.Names.Trust):
// what the loop needs to call remote interceptors in order (see
// SyncHooks). It is safe for concurrent use; keep one, it opens the buckets
// on first use.
//
// An entry's key is "<stage>.<plugin>" ("tool.before.pii") and its value the
// registration as JSON (interceptors.Registration's form):
//
//	{"plugin":"pii","stage":"tool.before","order":10,"timeout":"2s","policy":"fail","tools":"fetch_*"}
//
// A grant's key is the plugin and its value {"privileged_hooks":true}.
type Registry struct {
	b                    *bus.Bus
	hooks, trust, leases *kvstore.Bucket
}

// NewRegistry returns the registry of b's buckets. It does no I/O.
func NewRegistry(b *bus.Bus) *Registry {
	js, n := b.JetStream(), b.Names()
	return &Registry{b: b,
		hooks:  kvstore.NewBucket(js, n.Hooks, ErrRegistry),
		trust:  kvstore.NewBucket(js, n.Trust, ErrRegistry),
		leases: kvstore.NewBucket(js, n.Leases, ErrRegistry)}
}

// RegistryKey returns the registry key of plugin on stage: "<stage>.<plugin>".
func RegistryKey(stage events.Stage, plugin string) string { return string(stage) + "." + plugin }

// Put adds or replaces the registration of reg.Plugin on reg.Stage. It
// validates reg first: the error wraps interceptors.ErrInvalidRegistration
// for a bad field, events.ErrInvalidID for a plugin id that is not a
// subject token or a registry key (letters, digits, '-', '_', '/', '='),
// and interceptors.ErrPrivileged (naming plugin and stage) for a privileged
// stage when the plugin has no grant in the trust bucket. Builtin is
// refused: only code registering in-process interceptors may set it, never
// the registry. Remote is cleared (the transport sets it). Bucket failures
// wrap ErrRegistry.
//
// A registration Put writes has no lease: it stays until it is deleted
// (Hold writes registrations that live while their plugin does).
func (r *Registry) Put(ctx context.Context, reg interceptors.Registration) error {
	return r.put(ctx, reg, false)
}

// put writes reg, marked leased or not.
func (r *Registry) put(ctx context.Context, reg interceptors.Registration, leased bool) error {
	if err := checkEntry(reg); err != nil {
		return err
	}
	if reg.Builtin {
		return fmt.Errorf("%w: plugin %s on %s: builtin is set by code registering in-process interceptors, never through the registry",
			interceptors.ErrInvalidRegistration, reg.Plugin, reg.Stage)
	}
	reg.Remote = false
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	if reg.Stage.Privileged() {
		ok, err := r.granted(ctx, reg.Plugin)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: plugin %s lacks privileged_hooks permission for stage %s (grant it first)",
				interceptors.ErrPrivileged, reg.Plugin, reg.Stage)
		}
	}
	value, err := json.Marshal(reg)
	if err != nil {
		return fmt.Errorf("%w: plugin %s on %s: %v", interceptors.ErrInvalidRegistration, reg.Plugin, reg.Stage, err)
	}
	if leased {
		value = markLeased(value)
	}
	return r.hooks.Put(ctx, RegistryKey(reg.Stage, reg.Plugin), value)
}

// Get returns the registration of plugin on stage, or an error wrapping
// ErrNotFound. Bucket failures wrap ErrRegistry; an entry that does not
// parse wraps interceptors.ErrInvalidRegistration.
func (r *Registry) Get(ctx context.Context, stage events.Stage, plugin string) (interceptors.Registration, error) {
	key, err := entryKey(stage, plugin)
	if err != nil {
		return interceptors.Registration{}, err
	}
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	kv, err := r.hooks.KV(ctx)
	if err != nil {
		return interceptors.Registration{}, err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return interceptors.Registration{}, fmt.Errorf("%w: no registration of plugin %s on %s", ErrNotFound, plugin, stage)
	}
	if err != nil {
		return interceptors.Registration{}, r.hooks.Err(ctx, "get "+key+" from", err)
	}
	return decodeEntry(key, e.Value())
}

// Delete removes the registration of plugin on stage. The error wraps
// ErrNotFound when there is none, events.ErrInvalidID or
// interceptors.ErrInvalidRegistration for a bad plugin or stage, and
// ErrRegistry for a bucket failure.
func (r *Registry) Delete(ctx context.Context, stage events.Stage, plugin string) error {
	key, err := entryKey(stage, plugin)
	if err != nil {
		return err
	}
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	return deleteKey(ctx, r.hooks, key, fmt.Sprintf("no registration of plugin %s on %s", plugin, stage))
}

// deleteKey deletes key of b if it holds a value, or returns ErrNotFound.
func deleteKey(ctx context.Context, b *kvstore.Bucket, key, missing string) error {
	kv, err := b.KV(ctx)
	if err != nil {
		return err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("%w: %s", ErrNotFound, missing)
	}
	if err != nil {
		return b.Err(ctx, "get "+key+" from", err)
	}
	// Only the revision read: a concurrent put is not deleted unseen.
	if err := kv.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil {
		return b.Err(ctx, "delete "+key+" from", err)
	}
	return nil
}

// List returns every registration, in run order: by stage (in the order of
// events.Stages), then Order, then when the entry was last written. An
// entry that does not parse is left out and logged. Leased registrations
// whose plugin is gone are listed too (Entries tells them apart). Bucket
// failures wrap ErrRegistry.
func (r *Registry) List(ctx context.Context) ([]interceptors.Registration, error) {
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	all, err := r.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]interceptors.Registration, len(all))
	for i, l := range all {
		out[i] = l.reg
	}
	return out, nil
}

// listed is a registry entry as list reads it.
type listed struct {
	reg    interceptors.Registration
	rev    uint64
	leased bool
}

// list reads every valid registration, in run order.
func (r *Registry) list(ctx context.Context) ([]listed, error) {
	var all []listed
	err := r.hooks.ReadAll(ctx, func(e jetstream.KeyValueEntry) {
		if _, ok := disabledPlugin(e.Key()); ok {
			return // the kill switch (DisabledPlugins)
		}
		reg, err := decodeEntry(e.Key(), e.Value())
		if err != nil {
			r.b.Logger().Warn("hookbus registry: entry skipped", "bucket", r.b.Names().Hooks, "key", e.Key(), "err", err)
			return
		}
		all = append(all, listed{reg, e.Revision(), leasedEntry(e.Value())})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b listed) int {
		return cmp.Or(cmp.Compare(stageRank(a.reg.Stage), stageRank(b.reg.Stage)),
			cmp.Compare(a.reg.Order, b.reg.Order), cmp.Compare(a.rev, b.rev))
	})
	return all, nil
}

func stageRank(st events.Stage) int {
	if i := slices.Index(events.Stages(), st); i >= 0 {
		return i
	}
	return len(events.Stages())
}

// checkEntry validates reg and its plugin id as a registry key.
func checkEntry(reg interceptors.Registration) error {
	if err := reg.Validate(); err != nil {
		return err
	}
	return kvstore.CheckKeyID(reg.Plugin)
}

// entryKey validates stage and plugin and returns their key.
func entryKey(stage events.Stage, plugin string) (string, error) {
	if err := kvstore.CheckPluginKey(plugin); err != nil {
		return "", err
	}
	if !stage.Valid() {
		return "", fmt.Errorf("%w: plugin %s: stage %q is not a hookbus stage", interceptors.ErrInvalidRegistration, plugin, string(stage))
	}
	return RegistryKey(stage, plugin), nil
}

// decodeEntry reads a registry entry: the registration, validated, with
// Builtin cleared (never accepted from the registry) and Remote clear.
func decodeEntry(key string, value []byte) (interceptors.Registration, error) {
	var reg interceptors.Registration
	if err := json.Unmarshal(value, &reg); err != nil {
		return reg, fmt.Errorf("%w: registry entry %s: %v", interceptors.ErrInvalidRegistration, key, err)
	}
	reg.Builtin, reg.Remote = false, false
	if want := RegistryKey(reg.Stage, reg.Plugin); want != key {
		return reg, fmt.Errorf("%w: registry entry %s holds plugin %q on stage %q (its key would be %s)",
			interceptors.ErrInvalidRegistration, key, reg.Plugin, string(reg.Stage), want)
	}
	if err := checkEntry(reg); err != nil {
		return reg, err
	}
	return reg, nil
}
