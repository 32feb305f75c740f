package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/jsname"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// A worker's routes: per agent it serves, the consumers it may pull from
// (new runs, runs pinned to its definition, runs pinned to others it
// adopts), which of them it pulls from now (the registry says), and its
// presence in the fleet. See docs/ARCHITECTURE.md,
// "Routing by agent".

// pinnedInactive is how long a consumer of runs pinned to one definition
// lives without a worker pulling from it: the server then removes it (the
// requests stay queued; a worker holding the definition makes it again).
const pinnedInactive = 24 * time.Hour

// source is one consumer a worker pulls requests from.
type source struct {
	durable string
	filter  string
	agent   string
	digest  string // the definition its requests are pinned to ("" for new runs)

	// quietUntil (unix ns): a pinned source found empty while the worker
	// has agents' new runs to pull is left out of the turn until then.
	quietUntil atomic.Int64

	mu   sync.Mutex
	cons jetstream.Consumer
}

// quiet leaves s out of the turn for d.
func (s *source) quiet(d time.Duration) { s.quietUntil.Store(time.Now().Add(d).UnixNano()) }

func (s *source) consumer() jetstream.Consumer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cons
}

// route is one served agent.
type route struct {
	served     ServedAgent
	runs       *source            // new runs (and unpinned resumptions)
	own        *source            // runs pinned to the worker's definition (nil without one)
	adopted    map[string]*source // runs pinned to other definitions, by digest, while adopting
	newRuns    bool
	registered *AgentDefinition
}

// routes are a worker's routes.
type routes struct {
	rc    *Consumer
	fleet *Fleet
	list  []*route
	by    map[string]*route

	mu      sync.Mutex
	active  []*source
	long    int // how many of active are new runs
	cursor  int
	changed chan struct{} // closed when active changes
	poke    chan struct{} // a presence write is due now

	watch *kvstore.Watch
}

// consumerToken is an agent id as part of a consumer name: the id when it
// is made of letters, digits, '-' and '_', else "id-" and 32 hex digits of
// its SHA-256.
func consumerToken(agent string) string {
	if jsname.ValidToken(agent) {
		return agent
	}
	sum := sha256.Sum256([]byte(agent))
	return "id-" + hex.EncodeToString(sum[:16])
}

// AgentDurable returns the name of an agent's durable consumer of a pool
// (base): "<base>-<agent>", the agent id encoded as in ConsumerNames
// when it has characters a consumer name may not hold.
func AgentDurable(base, agent string) string {
	return base + "-" + consumerToken(agent)
}

// ConsumerNames returns the names of the consumers a pool (durable)
// has for agent: its new runs, and its runs pinned to digest ("" to leave
// it out).
func ConsumerNames(durable, agent, digest string) (runs, pinned string) {
	runs = durable + "-run-" + consumerToken(agent)
	if digest != "" {
		pinned = runs + "-" + digest
	}
	return runs, pinned
}

// newRoutes registers the worker's definitions and makes its consumers.
func (q *Queue) newRoutes(ctx context.Context, rc *Consumer) (*routes, error) {
	rs := &routes{rc: rc, fleet: newFleet(q), by: map[string]*route{}, changed: make(chan struct{}), poke: make(chan struct{}, 1)}
	for _, a := range rc.cfg.Agents {
		reg, mine, err := rs.fleet.register(ctx, a, rc.cfg.Worker)
		if err != nil {
			return nil, err
		}
		rt := &route{served: a, registered: reg, newRuns: mine, adopted: map[string]*source{}}
		runsName, pinnedName := ConsumerNames(rc.cfg.Durable, a.ID, a.Definition.Digest)
		runSubj, _ := q.subj.Run(a.ID)
		rt.runs = &source{durable: runsName, filter: runSubj, agent: a.ID}
		if d := a.Definition.Digest; d != "" {
			pinSubj, _ := q.subj.RunPinned(a.ID, d)
			rt.own = &source{durable: pinnedName, filter: pinSubj, agent: a.ID, digest: d}
		}
		for _, s := range []*source{rt.runs, rt.own} {
			if s == nil {
				continue
			}
			if err := rs.bind(ctx, s); err != nil {
				return nil, err
			}
		}
		rs.list = append(rs.list, rt)
		rs.by[a.ID] = rt
	}
	rs.recompute()
	return rs, nil
}

// bind creates or updates src's consumer (removing an idle consumer of an
// older hookbus that overlaps it) and keeps its handle.
func (rs *routes) bind(ctx context.Context, src *source) error {
	q, cfg := rs.rc.q, rs.rc.cfg
	cc := jetstream.ConsumerConfig{
		Durable:       src.durable,
		Description:   "hookbus loop workers: run requests of agent " + src.agent,
		FilterSubject: src.filter,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    cfg.MaxDeliver,
		MaxAckPending: cfg.MaxAckPending,
	}
	if src.digest != "" {
		cc.Description = "hookbus loop workers: runs of agent " + src.agent + " pinned to definition " + events.ShortDigest(src.digest)
		cc.InactiveThreshold = pinnedInactive
	}
	for tries := 0; ; tries++ {
		rctx, cancel := q.withTimeout(ctx)
		cons, err := q.js.CreateOrUpdateConsumer(rctx, q.names.Runs, cc)
		err = deadline.Err(rctx, err)
		cancel()
		if err == nil {
			src.mu.Lock()
			src.cons = cons
			src.mu.Unlock()
			return nil
		}
		var apiErr *jetstream.APIError
		if tries > 0 || !errors.As(err, &apiErr) || apiErr.ErrorCode != errCodeWQNotUnique {
			return fmt.Errorf("%w: run consumer %s: %w", ErrConsumer, src.durable, err)
		}
		if err := q.clearLegacy(ctx, cfg.Durable, src.filter); err != nil {
			return err
		}
	}
}

// recompute makes the list of sources pulled from now. Callers hold rs.mu
// (or own rs alone).
func (rs *routes) recompute() {
	var active []*source
	for _, rt := range rs.list {
		if rt.newRuns {
			active = append(active, rt.runs)
		}
		if rt.own != nil {
			active = append(active, rt.own)
		}
		if rt.newRuns && rt.served.Adopt {
			for _, d := range slices.Sorted(maps.Keys(rt.adopted)) {
				active = append(active, rt.adopted[d])
			}
		}
	}
	rs.active, rs.long = active, 0
	for _, s := range active {
		if s.digest == "" {
			rs.long++
		}
	}
	close(rs.changed)
	rs.changed = make(chan struct{})
	select {
	case rs.poke <- struct{}{}:
	default:
	}
}

// next returns the source a free slot pulls from (round robin), how many
// there are, how many of them are agents' new runs (the sources a worker
// long-polls), and a channel closed when they change.
func (rs *routes) next() (src *source, n, long int, changed <-chan struct{}) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.active) == 0 {
		return nil, 0, 0, rs.changed
	}
	now := time.Now().UnixNano()
	for range len(rs.active) {
		rs.cursor = (rs.cursor + 1) % len(rs.active)
		if rs.active[rs.cursor].quietUntil.Load() <= now {
			break
		}
	}
	return rs.active[rs.cursor], len(rs.active), rs.long, rs.changed
}

// takesNew reports whether the worker takes agent's new runs now.
func (rs *routes) takesNew(agent string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rt := rs.by[agent]
	return rt != nil && rt.newRuns
}

// snapshot is what the worker takes of each agent now.
func (rs *routes) snapshot() []AgentRoute {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]AgentRoute, len(rs.list))
	for i, rt := range rs.list {
		r := AgentRoute{Agent: rt.served.ID, NewRuns: rt.newRuns, Adopts: rt.served.Adopt}
		if rt.served.Definition.Digest != "" {
			d := rt.served.Definition
			r.Definition = &d
		}
		if rt.registered != nil {
			reg := *rt.registered
			r.Registered = &reg
		}
		out[i] = r
	}
	return out
}

// start writes the worker's presence, follows the registry, and keeps the
// presence (and adoption, when an agent adopts) going until rs.stop.
func (rs *routes) start(ctx context.Context) error {
	rc := rs.rc
	if err := rs.fleet.putPresence(ctx, rs.presence()); err != nil {
		return err
	}
	kv, err := rs.fleet.agents.KV(ctx)
	if err != nil {
		return err
	}
	w, _, err := kvstore.OpenWatch(ctx, kv, rc.q.names.Agents, func(e jetstream.KeyValueEntry) { rs.onDefinition(ctx, e) })
	if err != nil {
		_ = rs.fleet.deletePresence(context.WithoutCancel(ctx), rc.id)
		return fmt.Errorf("%w: %w", ErrFleet, err)
	}
	rs.watch = w
	rc.bg.Add(2)
	go func() {
		defer rc.bg.Done()
		for e := range w.Updates() {
			if e != nil {
				rs.onDefinition(rc.bgCtx, e)
			}
		}
	}()
	go rs.heartbeat()
	if slices.ContainsFunc(rs.list, func(rt *route) bool { return rt.served.Adopt }) {
		rc.bg.Add(1)
		go rs.adopt()
	}
	return nil
}

// stop ends the registry watch.
func (rs *routes) stop() {
	if rs.watch != nil {
		rs.watch.Stop()
	}
}

// presence is the worker's entry in the workers bucket.
func (rs *routes) presence() *WorkerPresence {
	rc := rs.rc
	return &WorkerPresence{ID: rc.id, Name: rc.cfg.Worker, Concurrency: rc.cfg.Concurrency,
		Started: rc.started, Seen: time.Now().UTC(), Agents: rs.snapshot()}
}

// heartbeat writes the worker's presence every Heartbeat, and at once when
// what it takes changes.
func (rs *routes) heartbeat() {
	rc := rs.rc
	defer rc.bg.Done()
	t := time.NewTicker(rc.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-rc.bgCtx.Done():
			return
		case <-t.C:
		case <-rs.poke:
		}
		ctx, cancel := context.WithTimeout(rc.bgCtx, rc.cfg.Heartbeat)
		if err := rs.fleet.putPresence(ctx, rs.presence()); err != nil && rc.bgCtx.Err() == nil {
			rc.q.log.Warn("hookbus: worker presence not written", "worker", rc.cfg.Worker, "error", err)
		}
		cancel()
	}
}
