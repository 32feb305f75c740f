package kvstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/nats-io/nats.go/jetstream"
)

// Watch follows every key of one KV bucket. OpenWatch hands the initial
// values to a function before returning; the owner then reads Updates from
// one goroutine and calls Stop when done.
type Watch struct {
	bucket string
	kv     jetstream.KeyValue
	w      jetstream.KeyWatcher
	cancel context.CancelFunc
}

// OpenWatch starts watching kv (delete markers included) and applies the
// current values, in revision order, before returning. It returns the
// revision the initial values bring the watcher to: at least the bucket's
// last revision when the watch started. ctx bounds the initial load only;
// the watch lasts until Stop. Its errors name the bucket; callers wrap
// them with their sentinel.
func OpenWatch(ctx context.Context, kv jetstream.KeyValue, bucket string, apply func(jetstream.KeyValueEntry)) (*Watch, uint64, error) {
	last, err := LastRevision(ctx, kv)
	if err != nil {
		return nil, 0, fmt.Errorf("watch key-value bucket %s: %w", bucket, deadline.Err(ctx, err))
	}
	wctx, cancel := context.WithCancel(context.Background())
	unbind := context.AfterFunc(ctx, cancel) // ctx ends the watch until the initial load is done
	w, err := kv.WatchAll(wctx)
	if err != nil {
		unbind()
		cancel()
		return nil, 0, fmt.Errorf("watch key-value bucket %s: %w", bucket, deadline.Err(ctx, err))
	}
	bw := &Watch{bucket: bucket, kv: kv, w: w, cancel: cancel}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				unbind()
				bw.Stop()
				return nil, 0, fmt.Errorf("watch of key-value bucket %s closed during the initial load: %w", bucket, deadline.Err(ctx, errors.New("watcher closed")))
			}
			if e == nil {
				if !unbind() { // ctx ended just now
					bw.Stop()
					return nil, 0, fmt.Errorf("initial load of key-value bucket %s: %w", bucket, ctx.Err())
				}
				return bw, last, nil
			}
			apply(e)
			last = max(last, e.Revision())
		case <-ctx.Done():
			bw.Stop()
			return nil, 0, fmt.Errorf("initial load of key-value bucket %s: %w", bucket, ctx.Err())
		}
	}
}

// Updates is the channel of changes; it is closed when the watch ends.
func (bw *Watch) Updates() <-chan jetstream.KeyValueEntry { return bw.w.Updates() }

// Bucket is the watched bucket's name.
func (bw *Watch) Bucket() string { return bw.bucket }

// KV is the watched bucket.
func (bw *Watch) KV() jetstream.KeyValue { return bw.kv }

// Stop ends the watch and drains what the watcher still delivers, so that
// its subscription's callback, which blocks on a full channel, can return.
func (bw *Watch) Stop() {
	bw.cancel()
	_ = bw.w.Stop()
	for range bw.w.Updates() {
	}
}

// LastRevision returns the bucket's last revision (its stream's last
// sequence).
func LastRevision(ctx context.Context, kv jetstream.KeyValue) (uint64, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return 0, err
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return 0, fmt.Errorf("unexpected bucket status %T", st)
	}
	return bs.StreamInfo().State.LastSeq, nil
}

// Progress is a revision applied by a watching goroutine, which others wait
// for.
type Progress struct {
	mu      sync.Mutex
	rev     uint64
	changed chan struct{} // closed and replaced at each change
	err     error         // why the watch ended, once it has
}

// NewProgress returns a progress at rev.
func NewProgress(rev uint64) *Progress {
	return &Progress{rev: rev, changed: make(chan struct{})}
}

// Set records rev as applied and wakes the waiters.
func (p *Progress) Set(rev uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rev = max(p.rev, rev)
	close(p.changed)
	p.changed = make(chan struct{})
}

// End records that the watch ended with err and wakes the waiters.
func (p *Progress) End(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

// State returns the applied revision, a channel closed at the next change,
// and the error of an ended watch.
func (p *Progress) State() (uint64, <-chan struct{}, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rev, p.changed, p.err
}

// Wait returns when rev is applied, the watch has ended (its error, even
// when rev was applied before: what follows will not be), or ctx ends.
func (p *Progress) Wait(ctx context.Context, rev uint64) error {
	for {
		have, changed, err := p.State()
		switch {
		case err != nil: // frozen: later changes will not be applied
			return err
		case have >= rev:
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for revision %d (applied %d): %w", rev, have, ctx.Err())
		}
	}
}
