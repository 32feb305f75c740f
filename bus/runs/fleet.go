package runs

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/jsname"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// The fleet: what the workers of one bus say about themselves. Two KV
// buckets hold it (docs/PROTOCOL.md, "Agent definitions"):
//
//   - hookbus_agents: per agent id, the definition the fleet runs its new
//     runs on (AgentDefinition). The first worker to serve an agent
//     registers its definition; a worker with another one takes none of the
//     agent's new runs unless it replaces the registered one.
//   - hookbus_workers: per live worker, what it serves (WorkerPresence),
//     written again every few seconds and forgotten PresenceTTL after the
//     last write: a worker that dies leaves the bucket by itself.

// DefaultHeartbeat is how often a worker writes its presence.
const DefaultHeartbeat = time.Second

// AgentDefinition is an agent's registered definition: the one its new runs
// run on.
type AgentDefinition struct {
	Agent string `json:"agent"`
	events.Definition
	// Source says where the definition was read (an agent file's path,
	// "flags").
	Source string `json:"source,omitempty"`
	// RegisteredBy names the worker that registered it; RegisteredAt when.
	RegisteredBy string    `json:"registered_by,omitempty"`
	RegisteredAt time.Time `json:"registered_at"`
}

// String names the registration for people: "ops v2 (3f2a9c0b1d4e, from
// ops.yaml, by host:812 at 10:02:03Z)".
func (d *AgentDefinition) String() string {
	s := d.Definition.String()
	var more []string
	if d.Source != "" {
		more = append(more, "from "+d.Source)
	}
	if d.RegisteredBy != "" {
		more = append(more, "by "+d.RegisteredBy)
	}
	if !d.RegisteredAt.IsZero() {
		more = append(more, "at "+d.RegisteredAt.UTC().Format(time.RFC3339))
	}
	if len(more) > 0 {
		s = strings.TrimSuffix(s, ")") + ", " + strings.Join(more, ", ") + ")"
	}
	return s
}

// WorkerPresence is a live worker as the workers bucket holds it.
type WorkerPresence struct {
	// ID is the worker's id (a ULID, its key); Name says where it runs
	// (host:pid, or the worker's configured name).
	ID   string `json:"id"`
	Name string `json:"name"`
	// Concurrency is how many runs it takes at once.
	Concurrency int          `json:"concurrency"`
	Started     time.Time    `json:"started"`
	Seen        time.Time    `json:"seen"`
	Agents      []AgentRoute `json:"agents"`
}

// AgentRoute is what a worker takes of one agent's requests.
type AgentRoute struct {
	Agent string `json:"agent"`
	// Definition is the definition the worker runs the agent on (nil: it
	// serves the agent without one).
	Definition *events.Definition `json:"definition,omitempty"`
	// NewRuns is set when the worker takes the agent's new runs (and
	// unpinned resumptions): its definition is the registered one, or the
	// agent has none and neither has the worker.
	NewRuns bool `json:"new_runs"`
	// Adopts is set when the worker also goes on with runs recorded on
	// other definitions of the agent (on_definition_change: adopt).
	Adopts bool `json:"adopts,omitempty"`
	// Registered is the agent's registered definition as the worker last
	// saw it (nil: none).
	Registered *AgentDefinition `json:"registered,omitempty"`
}

// Fleet reads and writes the fleet's buckets. It opens them on first use.
type Fleet struct {
	q               *Queue
	agents, workers *kvstore.Bucket
}

// NewFleet returns the fleet of b's buckets. It does no I/O.
func NewFleet(b *bus.Bus) *Fleet { return newFleet(New(b)) }

func newFleet(q *Queue) *Fleet {
	return &Fleet{q: q,
		agents:  kvstore.NewBucket(q.js, q.names.Agents, ErrFleet),
		workers: kvstore.NewBucket(q.js, q.names.Workers, ErrFleet)}
}

// agentKey is the registry key of an agent id: the id itself when it is
// made of letters, digits, '-' and '_', else "=" and the id's bytes in hex
// (KV keys allow fewer characters than ids).
func agentKey(id string) string {
	if jsname.ValidToken(id) {
		return id
	}
	return "=" + hex.EncodeToString([]byte(id))
}

// Definition returns the registered definition of agent, nil when it has
// none, and the entry's revision. The error wraps ErrFleet.
func (f *Fleet) Definition(ctx context.Context, agent string) (*AgentDefinition, uint64, error) {
	if err := events.ValidateID("agent", agent); err != nil {
		return nil, 0, err
	}
	kv, err := f.agents.KV(ctx)
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := f.q.withTimeout(ctx)
	defer cancel()
	e, err := kv.Get(ctx, agentKey(agent))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("%w: read the definition of agent %s: %w", ErrFleet, agent, deadline.Err(ctx, err))
	}
	d, err := decodeDefinition(e)
	if err != nil {
		return nil, 0, err
	}
	return d, e.Revision(), nil
}

// Definitions returns every registered definition, by agent id.
func (f *Fleet) Definitions(ctx context.Context) (map[string]*AgentDefinition, error) {
	kv, err := f.agents.KV(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]*AgentDefinition{}
	err = f.each(ctx, kv, func(e jetstream.KeyValueEntry) error {
		d, err := decodeDefinition(e)
		if err != nil {
			return err
		}
		out[d.Agent] = d
		return nil
	})
	return out, err
}

// Workers returns the live workers: those whose last heartbeat is younger
// than PresenceTTL (the bucket forgets the others by itself).
func (f *Fleet) Workers(ctx context.Context) ([]WorkerPresence, error) {
	kv, err := f.workers.KV(ctx)
	if err != nil {
		return nil, err
	}
	var out []WorkerPresence
	err = f.each(ctx, kv, func(e jetstream.KeyValueEntry) error {
		var p WorkerPresence
		if err := json.Unmarshal(e.Value(), &p); err != nil {
			return fmt.Errorf("%w: worker %s in %s: %v", ErrFleet, e.Key(), f.q.names.Workers, err)
		}
		out = append(out, p)
		return nil
	})
	slices.SortFunc(out, func(a, b WorkerPresence) int { return strings.Compare(a.Name+a.ID, b.Name+b.ID) })
	return out, err
}

// each calls fn with every live entry of kv (kvstore.ReadAll), until fn
// returns an error.
func (f *Fleet) each(ctx context.Context, kv jetstream.KeyValue, fn func(jetstream.KeyValueEntry) error) error {
	ctx, cancel := f.q.withTimeout(ctx)
	defer cancel()
	var ferr error
	err := kvstore.ReadAll(ctx, kv, func(e jetstream.KeyValueEntry) {
		if ferr == nil {
			ferr = fn(e)
		}
	})
	if err != nil && ferr == nil {
		return fmt.Errorf("%w: read %s: %w", ErrFleet, kv.Bucket(), deadline.Err(ctx, err))
	}
	return ferr
}

func decodeDefinition(e jetstream.KeyValueEntry) (*AgentDefinition, error) {
	var d AgentDefinition
	err := json.Unmarshal(e.Value(), &d)
	if err == nil {
		err = events.ValidateDigest(d.Digest)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: definition %s in %s: %v", ErrFleet, e.Key(), e.Bucket(), err)
	}
	return &d, nil
}

// register makes a's definition the agent's registered one when the agent
// has none, or when a replaces it (ServedAgent.Replace, or a newer
// version); it returns the registered definition after that (nil: none)
// and whether it is a's. An agent served without a definition registers
// nothing.
func (f *Fleet) register(ctx context.Context, a ServedAgent, by string) (*AgentDefinition, bool, error) {
	if a.Definition.Digest == "" {
		cur, _, err := f.Definition(ctx, a.ID)
		return cur, cur == nil, err
	}
	kv, err := f.agents.KV(ctx)
	if err != nil {
		return nil, false, err
	}
	mine := &AgentDefinition{Agent: a.ID, Definition: a.Definition, Source: a.Source, RegisteredBy: by, RegisteredAt: time.Now().UTC()}
	body, err := json.Marshal(mine)
	if err != nil {
		return nil, false, fmt.Errorf("%w: definition of agent %s: %v", ErrFleet, a.ID, err)
	}
	for tries := 0; tries < 5; tries++ {
		cur, rev, err := f.Definition(ctx, a.ID)
		if err != nil {
			return nil, false, err
		}
		switch {
		case cur != nil && cur.Digest == mine.Digest:
			return cur, true, nil
		case cur != nil && !a.Replace && !NewerVersion(mine.Version, cur.Version):
			return cur, false, nil
		}
		wctx, cancel := f.q.withTimeout(ctx)
		if cur == nil {
			_, err = kv.Create(wctx, agentKey(a.ID), body)
		} else {
			_, err = kv.Update(wctx, agentKey(a.ID), body, rev)
		}
		err = deadline.Err(wctx, err)
		cancel()
		switch {
		case err == nil:
			if cur != nil {
				f.q.log.Warn("hookbus: agent definition replaced", "agent", a.ID, "definition", mine.String(), "replaced", cur.String())
			}
			return mine, true, nil
		case errors.Is(err, jetstream.ErrKeyExists):
			continue // another worker registered or replaced it meanwhile: look again
		default:
			return nil, false, fmt.Errorf("%w: register the definition of agent %s: %w", ErrFleet, a.ID, err)
		}
	}
	return nil, false, fmt.Errorf("%w: register the definition of agent %s: the entry kept changing", ErrFleet, a.ID)
}

// putPresence writes a worker's presence (its heartbeat).
func (f *Fleet) putPresence(ctx context.Context, p *WorkerPresence) error {
	kv, err := f.workers.KV(ctx)
	if err != nil {
		return err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("%w: presence of worker %s: %v", ErrFleet, p.ID, err)
	}
	ctx, cancel := f.q.withTimeout(ctx)
	defer cancel()
	if _, err := kv.Put(ctx, p.ID, body); err != nil {
		return fmt.Errorf("%w: presence of worker %s: %w", ErrFleet, p.ID, deadline.Err(ctx, err))
	}
	return nil
}

// deletePresence removes a stopping worker's presence.
func (f *Fleet) deletePresence(ctx context.Context, id string) error {
	kv, err := f.workers.KV(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := f.q.withTimeout(ctx)
	defer cancel()
	return deadline.Err(ctx, kv.Delete(ctx, id))
}

// NewerVersion reports whether definition version a is newer than b, both
// dotted numbers with an optional leading "v" ("2" > "1.9", "v1.10" >
// "1.9"). It is false when either is empty or not such a number: whoever
// replaces such a definition says so (ServedAgent.Replace).
func NewerVersion(a, b string) bool {
	pa, oka := versionParts(a)
	pb, okb := versionParts(b)
	return oka && okb && slices.Compare(pa, pb) > 0
}

func versionParts(v string) ([]int, bool) {
	v = strings.TrimPrefix(v, "v")
	if v == "" {
		return nil, false
	}
	var out []int
	for _, p := range strings.Split(v, ".") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || p[0] == '+' {
			return nil, false
		}
		out = append(out, n)
	}
	for len(out) > 1 && out[len(out)-1] == 0 {
		out = out[:len(out)-1] // 1.0 is 1
	}
	return out, true
}
