package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/policy"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Key prefixes of the trust bucket's policy entries; no plugin id, kill
// switch or budget limit key starts so.
const (
	policyPrefix = "policy."
	testPrefix   = "policytest."
)

// Key returns the trust bucket's key of the policy name.
func Key(name string) string { return policyPrefix + name }

// TestKey returns the trust bucket's key of the last test of the policy
// name.
func TestKey(name string) string { return testPrefix + name }

// policyName returns the policy a trust bucket key holds, if it is such a
// key.
func policyName(key string) (string, bool) { return strings.CutPrefix(key, policyPrefix) }

// checkName checks that name is a policy id and a KV key token.
func checkName(name string) error {
	if err := events.ValidateID("policy", name); err != nil {
		return err
	}
	return kvstore.CheckKeyID(name)
}

// Record is a stored policy: the value of its key in the trust bucket,
// as JSON (docs/PROTOCOL.md, "Policies").
type Record struct {
	// Name is the policy's name (policy.Policy.Name).
	Name string `json:"name"`
	// Version is the digest of its source (policy.Policy.Version).
	Version string `json:"version"`
	// Source is the policy's YAML document as applied.
	Source string `json:"source"`
	// AppliedBy is who applied it: the connection's NATS user as the
	// server authenticated it.
	AppliedBy events.Actor `json:"applied_by"`
	// AppliedAt is when.
	AppliedAt time.Time `json:"applied_at"`
	// Revision is the entry's revision in the bucket (not stored).
	Revision uint64 `json:"-"`
}

// Policy parses the record's source: the one policy the record names. The
// error wraps ErrUnreadable (and policy.ErrInvalid when the source does
// not parse).
func (r Record) Policy() (*policy.Policy, error) {
	ps, err := policy.Parse(Key(r.Name), []byte(r.Source))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreadable, Key(r.Name), err)
	}
	if len(ps) != 1 || ps[0].Name != r.Name {
		return nil, fmt.Errorf("%w: %s: the source holds %d policies, want the one named %s", ErrUnreadable, Key(r.Name), len(ps), r.Name)
	}
	return ps[0], nil
}

// decodeRecord reads a policy's entry of the trust bucket.
func decodeRecord(e jetstream.KeyValueEntry) (Record, error) {
	var r Record
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return Record{}, fmt.Errorf("%w: %s: %v", ErrUnreadable, e.Key(), err)
	}
	if name, _ := policyName(e.Key()); r.Name != name {
		return Record{}, fmt.Errorf("%w: %s holds policy %q", ErrUnreadable, e.Key(), r.Name)
	}
	r.Revision = e.Revision()
	return r, nil
}

// Removed is the body of the delete marker of a deleted policy: which
// version was deleted, by whom and when.
type Removed struct {
	Name    string       `json:"name"`
	Version string       `json:"version,omitempty"`
	By      events.Actor `json:"by"`
	At      time.Time    `json:"at"`
}

// Store holds the policies of a bus in its trust bucket (bus.Names.Trust),
// which only the admin may write (deploy/nats) and every worker reads.
// Make one with New; it is safe for concurrent use.
type Store struct {
	b   *bus.Bus
	now func() time.Time
	kv  *kvstore.Bucket
}

// New returns the policy store of b. It does no I/O.
func New(b *bus.Bus) *Store {
	return &Store{b: b, now: func() time.Time { return time.Now().UTC() }, kv: kvstore.NewBucket(b.JetStream(), b.Names().Trust, ErrRegistry)}
}

// Put stores p under its name, for every process that Syncs to pick up,
// once it compiles (policy.Compile: every expression type-checks, within
// the cost limit); a policy that does not is refused and nothing is
// stored. The record names who applied it (by, with the connection's NATS
// user as the server authenticated it as Identity, by's channel, default
// events.ChannelNATS) and when. A policy whose version is already stored
// is left as it is: Put returns the stored record and changed false.
//
// The error wraps policy.ErrInvalid for a policy that does not compile or
// whose Source is not that one policy, events.ErrInvalidID for a bad
// name, ErrPermission when the connection may not write the bucket,
// ErrRegistry for a bucket failure, or WhoAmI's errors.
func (s *Store) Put(ctx context.Context, p *policy.Policy, by events.Actor) (rec Record, changed bool, err error) {
	if p == nil {
		return Record{}, false, fmt.Errorf("%w: nil policy", policy.ErrInvalid)
	}
	if err := checkName(p.Name); err != nil {
		return Record{}, false, err
	}
	if err := sameSource(p); err != nil {
		return Record{}, false, err
	}
	if err := Check(p); err != nil {
		return Record{}, false, err
	}
	cur, err := s.Get(ctx, p.Name)
	switch {
	case err == nil && cur.Version == p.Version:
		return cur, false, nil
	case err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrUnreadable):
		return Record{}, false, err
	}
	c, err := s.b.WhoAmI(ctx)
	if err != nil {
		return Record{}, false, err
	}
	rec = Record{Name: p.Name, Version: p.Version, Source: string(p.Source), AppliedBy: c.Actor(by), AppliedAt: s.now()}
	value, err := json.Marshal(rec)
	if err != nil {
		return Record{}, false, fmt.Errorf("%w: %s: %v", policy.ErrInvalid, p.Name, err)
	}
	ctx, cancel := deadline.Default(ctx, s.b.Timeout())
	defer cancel()
	if rec.Revision, err = s.write(ctx, Key(p.Name), value, nil); err != nil {
		return Record{}, false, s.bucketErr(ctx, "put "+Key(p.Name)+" in", err)
	}
	return rec, true, nil
}

// sameSource checks that p.Source parses to p itself, so that what every
// process reads back is what was compiled here.
func sameSource(p *policy.Policy) error {
	ps, err := policy.Parse(Key(p.Name), p.Source)
	if err != nil {
		return err
	}
	if len(ps) != 1 || ps[0].Name != p.Name || ps[0].Version != p.Version {
		return fmt.Errorf("%w: policy %s: its source is not that one policy (%d documents)", policy.ErrInvalid, p.Name, len(ps))
	}
	return nil
}

// Get returns the stored policy name. The error wraps ErrNotFound,
// ErrUnreadable for an entry that does not decode, events.ErrInvalidID for
// a bad name, or ErrRegistry.
func (s *Store) Get(ctx context.Context, name string) (Record, error) {
	if err := checkName(name); err != nil {
		return Record{}, err
	}
	e, err := s.get(ctx, Key(name), "policy "+name)
	if err != nil {
		return Record{}, err
	}
	return decodeRecord(e)
}

// get reads key, which holds what, from the bucket; the error wraps
// ErrNotFound ("no " what) or ErrRegistry.
func (s *Store) get(ctx context.Context, key, what string) (jetstream.KeyValueEntry, error) {
	ctx, cancel := deadline.Default(ctx, s.b.Timeout())
	defer cancel()
	kv, err := s.kv.KV(ctx)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: no %s", ErrNotFound, what)
	}
	if err != nil {
		return nil, s.bucketErr(ctx, "get "+key+" from", err)
	}
	return e, nil
}

// List returns the stored policies, by name. An entry that does not decode
// is left out and returned in skipped (its error wraps ErrUnreadable).
// Bucket failures wrap ErrRegistry.
func (s *Store) List(ctx context.Context) (recs []Record, skipped []error, err error) {
	ctx, cancel := deadline.Default(ctx, s.b.Timeout())
	defer cancel()
	kv, err := s.kv.KV(ctx)
	if err != nil {
		return nil, nil, err
	}
	err = kvstore.ReadAll(ctx, kv, func(e jetstream.KeyValueEntry) {
		if _, ok := policyName(e.Key()); !ok {
			return
		}
		r, err := decodeRecord(e)
		if err != nil {
			skipped = append(skipped, err)
			return
		}
		recs = append(recs, r)
	})
	if err != nil {
		return nil, nil, s.bucketErr(ctx, "list", err)
	}
	slices.SortFunc(recs, func(a, b Record) int { return strings.Compare(a.Name, b.Name) })
	return recs, skipped, nil
}

// Delete removes the policy name: every process that Syncs stops
// applying it. Its delete marker records who did (a Removed as JSON; by
// is filled as Put fills it). The error wraps ErrNotFound when no such
// policy is stored, events.ErrInvalidID for a bad name, ErrPermission,
// ErrRegistry, or WhoAmI's errors.
func (s *Store) Delete(ctx context.Context, name string, by events.Actor) error {
	if err := checkName(name); err != nil {
		return err
	}
	e, err := s.get(ctx, Key(name), "policy "+name)
	if err != nil {
		return err
	}
	cur, _ := decodeRecord(e) // an unreadable entry is deleted too
	c, err := s.b.WhoAmI(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := deadline.Default(ctx, s.b.Timeout())
	defer cancel()
	body, _ := json.Marshal(Removed{Name: name, Version: cur.Version, By: c.Actor(by), At: s.now()}) // cannot fail
	h := nats.Header{"KV-Operation": []string{"DEL"}, jetstream.ExpectedLastSubjSeqHeader: []string{strconv.FormatUint(e.Revision(), 10)}}
	if _, err := s.write(ctx, Key(name), body, h); err != nil {
		return s.bucketErr(ctx, "delete "+Key(name)+" from", err)
	}
	return nil
}

// PutTest stores result, the last test of the policy name against the
// record (observer policy test writes it), as JSON. The error wraps
// ErrInvalidOption for a result that is not JSON, events.ErrInvalidID,
// ErrPermission or ErrRegistry.
func (s *Store) PutTest(ctx context.Context, name string, result json.RawMessage) error {
	if err := checkName(name); err != nil {
		return err
	}
	if !json.Valid(result) {
		return invalid("test result of policy %s: not JSON", name)
	}
	ctx, cancel := deadline.Default(ctx, s.b.Timeout())
	defer cancel()
	if _, err := s.write(ctx, TestKey(name), bytes.Clone(result), nil); err != nil {
		return s.bucketErr(ctx, "put "+TestKey(name)+" in", err)
	}
	return nil
}

// GetTest returns the last test result PutTest stored for the policy name.
// The error wraps ErrNotFound, events.ErrInvalidID or ErrRegistry.
func (s *Store) GetTest(ctx context.Context, name string) (json.RawMessage, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	e, err := s.get(ctx, TestKey(name), "test of policy "+name)
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

// write stores value (with header h: a delete marker's) under key of the
// trust bucket and returns its revision. A write the server refuses (only
// the admin may write the bucket) fails at once with ErrPermission, rather
// than when ctx ends: the server's refusal of the publish comes before the
// answer to the flush that follows it.
func (s *Store) write(ctx context.Context, key string, value []byte, h nats.Header) (uint64, error) {
	if _, err := s.kv.KV(ctx); err != nil { // the bucket is there
		return 0, err
	}
	m := &nats.Msg{Subject: "$KV." + s.b.Names().Trust + "." + key, Data: value, Header: h}
	f, err := s.b.JetStream().PublishMsgAsync(m)
	if err != nil {
		return 0, err
	}
	nc := s.b.Conn()
	if err := nc.FlushWithContext(ctx); err == nil {
		if last := nc.LastError(); last != nil && errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(last.Error(), `"`+m.Subject+`"`) {
			return 0, last
		}
	}
	select {
	case ack := <-f.Ok():
		return ack.Sequence, nil
	case err := <-f.Err():
		return 0, err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (s *Store) bucketErr(ctx context.Context, what string, err error) error {
	return permission(s.kv.Err(ctx, what, err))
}

// permission adds ErrPermission to a refusal of the server.
func permission(err error) error {
	if errors.Is(err, nats.ErrPermissionViolation) {
		return fmt.Errorf("%w (only the admin writes policies): %w", ErrPermission, err)
	}
	return err
}
