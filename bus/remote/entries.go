package remote

import (
	"context"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/nats-io/nats.go/jetstream"
)

// Unreadable is a registry entry that holds no valid registration (a
// value that does not parse, a key it does not match, a registration that
// does not validate): List skips it, and every loop warns about it.
type Unreadable struct {
	// Key is the entry's key.
	Key string
	// Err says why it does not read.
	Err error
}

// Unreadable returns the registry's entries that List skips, in key
// order, so that they can be reported and removed (DeleteEntry). Bucket
// failures wrap ErrRegistry.
func (r *Registry) Unreadable(ctx context.Context) ([]Unreadable, error) {
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	var out []Unreadable
	err := r.hooks.ReadAll(ctx, func(e jetstream.KeyValueEntry) {
		if _, ok := disabledPlugin(e.Key()); ok {
			return
		}
		if _, err := decodeEntry(e.Key(), e.Value()); err != nil {
			out = append(out, Unreadable{Key: e.Key(), Err: err})
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Unreadable) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// DeleteEntry removes the registry entry key whatever it holds, without
// reading it as a registration: an entry Unreadable reports. The error
// wraps ErrNotFound when there is none, ErrRegistry for a bucket failure.
func (r *Registry) DeleteEntry(ctx context.Context, key string) error {
	ctx, cancel := deadline.Default(ctx, r.b.Timeout())
	defer cancel()
	return deleteKey(ctx, r.hooks, key, "no registry entry "+key)
}
