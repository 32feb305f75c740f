package kvstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/lazy"
	"github.com/nats-io/nats.go/jetstream"
)

// Bucket is one KV bucket, opened on first use: KV opens it once per
// Bucket, safely for concurrent use, and again on a later call after a
// failure. Its errors wrap the sentinel it was made with.
type Bucket struct {
	js       jetstream.JetStream
	name     string
	sentinel error
	h        lazy.Handle[jetstream.KeyValue]
}

// NewBucket returns the bucket name of js, whose errors wrap sentinel. It
// does no I/O.
func NewBucket(js jetstream.JetStream, name string, sentinel error) *Bucket {
	return &Bucket{js: js, name: name, sentinel: sentinel}
}

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.name }

// KV returns the bucket, opening it the first time. The error wraps the
// Bucket's sentinel; a missing bucket is said as such (the bus was not
// provisioned).
func (b *Bucket) KV(ctx context.Context) (jetstream.KeyValue, error) {
	return b.h.Get(ctx, func(ctx context.Context) (jetstream.KeyValue, error) {
		return open(ctx, b.js, b.name, b.sentinel)
	})
}

// Err wraps err, a failure of what on the bucket ("put k in", "list"):
// the error wraps the Bucket's sentinel and err, names the bucket, and
// says so when ctx ended first.
func (b *Bucket) Err(ctx context.Context, what string, err error) error {
	return fmt.Errorf("%w: %s key-value bucket %s: %w", b.sentinel, what, b.name, deadline.Err(ctx, err))
}

// Put writes value at key, opening the bucket the first time. The error
// is KV's or Err's.
func (b *Bucket) Put(ctx context.Context, key string, value []byte) error {
	kv, err := b.KV(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, key, value); err != nil {
		return b.Err(ctx, "put "+key+" in", err)
	}
	return nil
}

// ReadAll hands every current entry of the bucket to fn, as the package's
// ReadAll does, opening the bucket the first time. The error is KV's or
// Err's.
func (b *Bucket) ReadAll(ctx context.Context, fn func(jetstream.KeyValueEntry)) error {
	kv, err := b.KV(ctx)
	if err != nil {
		return err
	}
	if err := ReadAll(ctx, kv, fn); err != nil {
		return b.Err(ctx, "list", err)
	}
	return nil
}

// Open opens bucket; the error wraps ErrRegistry.
func Open(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	return open(ctx, js, bucket, ErrRegistry)
}

func open(ctx context.Context, js jetstream.JetStream, bucket string, sentinel error) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("%w: key-value bucket %s does not exist (provision the bus first)", sentinel, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: open key-value bucket %s: %w", sentinel, bucket, deadline.Err(ctx, err))
	}
	return kv, nil
}
