package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go/jetstream"
)

// A leased registration lives while its plugin lives. Registry.Hold (and
// Serve with ServeConfig.Register) writes the plugin's registrations
// marked "lease":true and keeps a lease for the running instance in the
// leases bucket (bus.Names.Leases, key "<plugin>.<instance>"), written
// again every LeaseRenewal. The bucket forgets a lease bus.LeaseTTL after
// its last write, so a plugin that dies (SIGKILL, a lost machine) holds
// none within seconds: loops stop calling its leased registrations
// (HookSync), Entries lists them as gone, and Prune removes them. A plugin
// that stops cleanly (Lease.Release) deletes its lease and, when no other
// instance holds one, its leased registrations. A registration without the
// mark (observer hooks add, hooks apply -f, Registry.Put) has no lease
// and stays until it is deleted. docs/PROTOCOL.md ("Leases") has the wire
// form, for plugins in other languages.

// LeaseRenewal is how often a lease is written again: well within
// bus.LeaseTTL, so that one late write does not end it.
const LeaseRenewal = time.Second

// leaseMark is the field that marks a leased registration in its entry.
const leaseMark = `"lease":true`

// LeaseInfo is a lease's value: which instance of a plugin holds it.
type LeaseInfo struct {
	Plugin   string `json:"plugin"`
	Instance string `json:"instance"`
	// Host says where the instance runs (host:pid).
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"`
}

// Lease is one plugin instance's hold on its leased registrations: made by
// Registry.Hold, renewed until Release (or the end of Hold's ctx).
type Lease struct {
	r        *Registry
	info     LeaseInfo
	key      string
	stages   []events.Stage
	cancel   context.CancelFunc
	done     chan struct{}
	once     sync.Once
	released error
}

// Hold writes regs, every one of plugin, as leased registrations and holds
// the plugin instance's lease until Release or until ctx ends (which
// releases it). The lease is written before the registrations, so a loop
// never sees them without it. Each registration is checked as Put checks
// it (its errors); a registration of another plugin wraps
// interceptors.ErrInvalidRegistration. Bucket failures wrap ErrRegistry
// (a missing leases bucket: provision the bus again).
func (r *Registry) Hold(ctx context.Context, plugin string, regs ...interceptors.Registration) (*Lease, error) {
	if err := kvstore.CheckPluginKey(plugin); err != nil {
		return nil, err
	}
	if len(regs) == 0 {
		return nil, fmt.Errorf("%w: hold a lease of plugin %s: no registrations", interceptors.ErrInvalidRegistration, plugin)
	}
	for _, reg := range regs {
		if reg.Plugin != plugin {
			return nil, fmt.Errorf("%w: hold a lease of plugin %s: a registration of plugin %q", interceptors.ErrInvalidRegistration, plugin, reg.Plugin)
		}
		if err := checkEntry(reg); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	l := &Lease{
		r:    r,
		info: LeaseInfo{Plugin: plugin, Instance: events.NewID(), Host: host + ":" + strconv.Itoa(os.Getpid()), Started: time.Now().UTC()},
		done: make(chan struct{}),
	}
	l.key = plugin + "." + l.info.Instance
	wctx, cancel := deadline.Default(ctx, r.b.Timeout())
	err := l.renew(wctx)
	for _, reg := range regs {
		if err != nil {
			break
		}
		err = r.put(wctx, reg, true)
		l.stages = append(l.stages, reg.Stage)
	}
	cancel()
	if err != nil {
		_ = l.release(context.WithoutCancel(ctx))
		return nil, err
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = stop
	go l.keep(rctx)
	context.AfterFunc(ctx, func() { _ = l.Release(context.Background()) })
	return l, nil
}

// Info says which plugin instance holds the lease.
func (l *Lease) Info() LeaseInfo { return l.info }

// keep writes the lease every LeaseRenewal until ctx ends.
func (l *Lease) keep(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(LeaseRenewal)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wctx, cancel := context.WithTimeout(ctx, bus.LeaseTTL-LeaseRenewal)
		if err := l.renew(wctx); err != nil && ctx.Err() == nil {
			l.r.b.Logger().Warn("hookbus lease: not renewed; loops stop calling the plugin if it lapses", "plugin", l.info.Plugin, "instance", l.info.Instance, "err", err)
		}
		cancel()
	}
}

// renew writes the lease.
func (l *Lease) renew(ctx context.Context) error {
	value, _ := json.Marshal(l.info)
	return l.r.leases.Put(ctx, l.key, value)
}

// Release stops renewing the lease and deletes it; when no other instance
// of the plugin holds a lease, it deletes the plugin's leased
// registrations too (those Hold wrote, if they are still leased). It is
// idempotent: later calls return the first one's error.
func (l *Lease) Release(ctx context.Context) error {
	l.once.Do(func() {
		if l.cancel != nil {
			l.cancel()
			<-l.done
		}
		l.released = l.release(ctx)
	})
	return l.released
}

func (l *Lease) release(ctx context.Context) error {
	ctx, cancel := deadline.Default(ctx, l.r.b.Timeout())
	defer cancel()
	kv, err := l.r.leases.KV(ctx)
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, l.key); err != nil {
		return l.r.leases.Err(ctx, "delete "+l.key+" from", err)
	}
	held, err := l.r.Leases(ctx)
	if err != nil {
		return err
	}
	if len(held[l.info.Plugin]) > 0 {
		return nil // another instance serves the plugin
	}
	hooks, err := l.r.hooks.KV(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, st := range l.stages {
		key := RegistryKey(st, l.info.Plugin)
		e, err := hooks.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, l.r.hooks.Err(ctx, "get "+key+" from", err))
			continue
		}
		if !leasedEntry(e.Value()) {
			continue // made a registration without a lease since
		}
		err = hooks.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
		if err != nil && !errors.Is(err, jetstream.ErrKeyExists) { // written again since: its writer's
			errs = append(errs, l.r.hooks.Err(ctx, "delete "+key+" from", err))
		}
	}
	return errors.Join(errs...)
}

// Leases returns the leases held now, by plugin. Bucket failures wrap
// ErrRegistry.
func (r *Registry) Leases(ctx context.Context) (map[string][]LeaseInfo, error) {
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	out := map[string][]LeaseInfo{}
	err := r.leases.ReadAll(ctx, func(e jetstream.KeyValueEntry) {
		if info, ok := decodeLease(e.Key(), e.Value()); ok {
			out[info.Plugin] = append(out[info.Plugin], info)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decodeLease reads a lease entry; ok is false for one that does not
// parse or whose key does not match it.
func decodeLease(key string, value []byte) (LeaseInfo, bool) {
	var info LeaseInfo
	if json.Unmarshal(value, &info) != nil || info.Plugin == "" || key != info.Plugin+"."+info.Instance {
		// The key alone still names the plugin.
		plugin, instance, ok := strings.Cut(key, ".")
		return LeaseInfo{Plugin: plugin, Instance: instance}, ok && plugin != ""
	}
	return info, true
}

// Entry is a registry entry as Entries reads it: the registration, whether
// it is leased, and whether its plugin holds a lease now.
type Entry struct {
	interceptors.Registration
	// Leased is set for a registration written with a lease (Hold, Serve's
	// Register): it lives while its plugin does.
	Leased bool `json:"leased,omitempty"`
	// Gone is set for a leased registration whose plugin holds no lease:
	// loops do not call it, and Prune removes it.
	Gone bool `json:"gone,omitempty"`
	// Instances are the plugin instances holding a lease.
	Instances []LeaseInfo `json:"instances,omitempty"`
}

// Entries returns every registration, in List's order, with its lease.
// Bucket failures wrap ErrRegistry.
func (r *Registry) Entries(ctx context.Context) ([]Entry, error) {
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	all, err := r.list(ctx)
	if err != nil {
		return nil, err
	}
	held, err := r.Leases(ctx) // read after the registrations: a plugin writes its lease first
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(all))
	for i, l := range all {
		out[i] = Entry{Registration: l.reg, Leased: l.leased}
		if l.leased {
			out[i].Instances = held[l.reg.Plugin]
			out[i].Gone = len(out[i].Instances) == 0
		}
	}
	return out, nil
}

// Prune deletes the leased registrations whose plugin holds no lease (a
// plugin that died without releasing them) and returns them. A
// registration written again since it was read is kept. Registrations
// without a lease are never pruned. Bucket failures wrap ErrRegistry.
func (r *Registry) Prune(ctx context.Context) ([]interceptors.Registration, error) {
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	all, err := r.list(ctx)
	if err != nil {
		return nil, err
	}
	held, err := r.Leases(ctx)
	if err != nil {
		return nil, err
	}
	kv, err := r.hooks.KV(ctx)
	if err != nil {
		return nil, err
	}
	var out []interceptors.Registration
	for _, l := range all {
		if !l.leased || len(held[l.reg.Plugin]) > 0 {
			continue
		}
		key := RegistryKey(l.reg.Stage, l.reg.Plugin)
		err := kv.Delete(ctx, key, jetstream.LastRevision(l.rev))
		switch {
		case err == nil:
			out = append(out, l.reg)
		case errors.Is(err, jetstream.ErrKeyExists):
			// written again since it was read: a plugin starting now
		default:
			return out, r.hooks.Err(ctx, "delete "+key+" from", err)
		}
	}
	return out, nil
}

// leasedEntry reports whether a registry entry's value is marked leased.
func leasedEntry(value []byte) bool {
	if !bytes.Contains(value, []byte(`"lease"`)) {
		return false
	}
	var m struct {
		Lease bool `json:"lease"`
	}
	return json.Unmarshal(value, &m) == nil && m.Lease
}

// markLeased adds the lease mark to a registration's JSON object.
func markLeased(value []byte) []byte {
	out := make([]byte, 0, len(value)+len(leaseMark)+1)
	out = append(out, '{')
	out = append(out, leaseMark...)
	if rest := value[1:]; len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, value[1:]...)
}
