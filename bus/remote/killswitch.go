package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go/jetstream"
)

// The kill switch: an entry "disabled.<plugin>" in the trust bucket (the
// operator's bucket, which only the admin writes; bus.Names.Trust) turns
// the plugin off in every loop that follows the registry (SyncHooks),
// whatever its registrations; deleting the entry turns it back on (the
// delete marker's body records who did). Its value is an
// interceptors.Disabled as JSON:
//
//	{"by":"alice","at":"2025-05-01T10:00:00Z","reason":"leaks PII","identity":"alice","via":"nats","channel":"cli"}
//
// deploy/nats lets no identity but the admin write that bucket, and the
// bucket refuses roll-ups (bus.Provision), so no worker can lift it. An
// entry of an older hookbus in the registry bucket is moved by
// bus.Provision and ignored by the loops. See docs/PROTOCOL.md, "Kill
// switch".

// disabledPrefix starts the keys of disabled plugins; no stage starts so.
const disabledPrefix = "disabled."

// DisabledKey returns the trust bucket's key that disables plugin.
func DisabledKey(plugin string) string { return disabledPrefix + plugin }

// disabledPlugin returns the plugin a registry key disables, if it is such a
// key.
func disabledPlugin(key string) (string, bool) { return strings.CutPrefix(key, disabledPrefix) }

// Disable turns plugin off in every loop following the registry, within
// the time a KV watch takes to deliver (well under a second on a healthy
// server). d.At defaults to now. The entry records who disables it: the
// connection's NATS user as the server authenticated it (WhoAmI) as
// d.Identity and d.By, d.Channel as given (default events.ChannelNATS), and
// d.DeclaredBy (or, when empty, the d.By given) as a note. The error wraps events.ErrInvalidID for a bad
// plugin id, ErrRegistry for a bucket failure, or WhoAmI's errors.
func (r *Registry) Disable(ctx context.Context, plugin string, d interceptors.Disabled) error {
	if err := kvstore.CheckPluginKey(plugin); err != nil {
		return err
	}
	if d.At.IsZero() {
		d.At = time.Now().UTC()
	}
	if d.DeclaredBy == "" {
		d.DeclaredBy = d.By // a name the caller gave is kept, as a note
	}
	a, err := actor(ctx, r.b, d.Actor)
	if err != nil {
		return err
	}
	d.Actor, d.By = a, a.Identity
	value, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("%w: disable %s: %v", ErrRegistry, plugin, err)
	}
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	return r.trust.Put(ctx, DisabledKey(plugin), value)
}

// Enable turns plugin back on. The delete marker records who did, as
// Disable's entry does (an Enabled as JSON; a is filled as Disable fills
// d.Actor). The error wraps ErrNotFound when it was not disabled,
// events.ErrInvalidID for a bad id, ErrRegistry for a bucket failure, or
// WhoAmI's errors.
func (r *Registry) Enable(ctx context.Context, plugin string, a events.Actor) error {
	if err := kvstore.CheckPluginKey(plugin); err != nil {
		return err
	}
	a, err := actor(ctx, r.b, a)
	if err != nil {
		return err
	}
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	kv, err := r.trust.KV(ctx)
	if err != nil {
		return err
	}
	record, _ := json.Marshal(Enabled{By: a.Identity, At: time.Now().UTC(), Actor: a}) // cannot fail
	return kvstore.DeleteWithRecord(ctx, r.b.JetStream(), kv, r.b.Names().Trust, DisabledKey(plugin), "plugin "+plugin+" is not disabled", record)
}

// Enabled is the body of the delete marker that turns a plugin back on:
// who did, and when.
type Enabled struct {
	By string    `json:"by,omitempty"`
	At time.Time `json:"at"`
	events.Actor
}

// DisabledPlugins returns the disabled plugins. An entry that does not
// parse counts as disabled with no details (the loops read it so too).
// Bucket failures wrap ErrRegistry.
func (r *Registry) DisabledPlugins(ctx context.Context) (map[string]interceptors.Disabled, error) {
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	out := map[string]interceptors.Disabled{}
	err := r.trust.ReadAll(ctx, func(e jetstream.KeyValueEntry) {
		if p, ok := disabledPlugin(e.Key()); ok {
			out[p] = decodeDisabled(e.Value())
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decodeDisabled reads a disabled entry; one that does not parse still
// disables (fail safe: the operator meant to turn the plugin off).
func decodeDisabled(value []byte) interceptors.Disabled {
	var d interceptors.Disabled
	if err := json.Unmarshal(value, &d); err != nil {
		return interceptors.Disabled{Reason: "unreadable kill-switch entry: " + err.Error()}
	}
	return d
}

// actor fills a with who b's connection is (bus.Caller.Actor).
func actor(ctx context.Context, b *bus.Bus, a events.Actor) (events.Actor, error) {
	c, err := b.WhoAmI(ctx)
	if err != nil {
		return a, err
	}
	return c.Actor(a), nil
}
