// Package kvstore holds what hookbus' bus packages do with the KV buckets
// they keep records in (the interceptor registry, trust grants, shared
// budgets, the fleet): open a bucket once (Bucket), read every entry, delete an entry
// with a record of who did, check keys, and follow a bucket's changes
// (Watch) with the revision applied (Progress).
package kvstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ReadAll hands every current entry of kv (no delete markers) to fn, in
// revision order.
func ReadAll(ctx context.Context, kv jetstream.KeyValue, fn func(jetstream.KeyValueEntry)) error {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer func() { // stop, and drain so that the watcher's callback can return
		_ = w.Stop()
		for range w.Updates() {
		}
	}()
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("watcher closed")
			}
			if e == nil {
				return nil
			}
			fn(e)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// DeleteWithRecord deletes key of kv (bucket, through js) on the revision
// read, with body in its delete marker (who deleted it): KV readers see a
// delete, and the bucket's history keeps the body. The error wraps
// ErrNotFound (saying missing) when the key holds no value, or ErrRegistry.
func DeleteWithRecord(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, bucket, key, missing string, body []byte) error {
	_, err := DeleteWithRecordRev(ctx, js, kv, bucket, key, missing, body)
	return err
}

// DeleteWithRecordRev is DeleteWithRecord returning the delete marker's
// revision.
func DeleteWithRecordRev(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, bucket, key, missing string, body []byte) (uint64, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, fmt.Errorf("%w: %s", ErrNotFound, missing)
	}
	if err != nil {
		return 0, fmt.Errorf("%w: get %s from key-value bucket %s: %w", ErrRegistry, key, bucket, deadline.Err(ctx, err))
	}
	msg := &nats.Msg{Subject: "$KV." + bucket + "." + key, Data: body, Header: nats.Header{
		"KV-Operation":                      []string{"DEL"},
		jetstream.ExpectedLastSubjSeqHeader: []string{strconv.FormatUint(e.Revision(), 10)},
	}}
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil {
		return 0, fmt.Errorf("%w: delete %s from key-value bucket %s: %w", ErrRegistry, key, bucket, deadline.Err(ctx, err))
	}
	return ack.Sequence, nil
}

// CheckKeyID checks that a plugin (or agent) id can be a KV key token:
// JetStream keys allow only letters, digits, '-', '_', '/', '=' and '.'
// (which an id never holds). The error wraps events.ErrInvalidID.
func CheckKeyID(plugin string) error {
	if !KeyChars(plugin) {
		return fmt.Errorf("%w: plugin id %q cannot be a registry key (letters, digits, '-', '_', '/' and '=' only)", events.ErrInvalidID, plugin)
	}
	return nil
}

// KeyChars reports whether every byte of s may be in a token of a KV key:
// letters, digits, '-', '_', '/' and '='.
func KeyChars(s string) bool {
	return !strings.ContainsFunc(s, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-_/=", c))
	})
}

// CheckPluginKey checks that plugin is a valid id and a KV key token.
func CheckPluginKey(plugin string) error {
	if err := events.ValidateID("plugin", plugin); err != nil {
		return err
	}
	return CheckKeyID(plugin)
}
