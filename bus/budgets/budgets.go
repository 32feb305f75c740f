package budgets

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/internal/deadline"
	"github.com/hookbus/hookbus/bus/internal/kvstore"
	"github.com/hookbus/hookbus/bus/internal/lazy"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// Shared budgets: what an agent (or each of its sessions) may spend per
// period, across every worker. Key "limit.<agent>" of the trust bucket
// (bus.Names.Trust, the operator's, which only the admin writes) holds a
// Limit. What a budget used is counted in the usage stream (spent.go),
// which no worker can take from. Key "use.<agent>" (or
// "use.<agent>.<session>" for a per-session budget) of the KV bucket
// bus.Names.Budgets (hookbus_budgets) holds the Use of the current period:
// the steps under way and the estimate of the next one. Every change of a
// use is a compare-and-set on the revision read (jetstream.KeyValue.Update),
// retried on conflict, so concurrent workers never lose each other's
// reservations. See docs/PROTOCOL.md, "Shared budgets".

// DefaultReservationTTL is how long a step's reservation holds when its
// worker never charges it (a worker that died during the model call).
const DefaultReservationTTL = 10 * time.Minute

// Limit is the shared budget of an agent: at most Tokens tokens (input
// plus output) and CostUSD dollars per Period, for the agent as a whole or,
// with PerSession, for each of its sessions. A zero bound bounds nothing.
// Periods are aligned on the Unix epoch (24h: midnight UTC to midnight UTC).
type Limit struct {
	Agent      string        `json:"agent"`
	Period     time.Duration `json:"-"`
	Tokens     int64         `json:"tokens,omitempty"`
	CostUSD    float64       `json:"cost_usd,omitempty"`
	PerSession bool          `json:"per_session,omitempty"`
	// By and At record who set the budget and when (SetLimit fills them:
	// the connection's NATS user as the server authenticated it, the
	// channel and note as given).
	By *events.Actor `json:"by,omitempty"`
	At time.Time     `json:"at,omitzero"`
}

type budgetLimitJSON struct {
	budgetLimitFields
	Period string `json:"period"`
}

type budgetLimitFields Limit

// MarshalJSON writes the period as a Go duration string ("24h0m0s").
func (l Limit) MarshalJSON() ([]byte, error) {
	return json.Marshal(budgetLimitJSON{budgetLimitFields(l), l.Period.String()})
}

// UnmarshalJSON reads the period as a Go duration string.
func (l *Limit) UnmarshalJSON(b []byte) error {
	var j budgetLimitJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*l = Limit(j.budgetLimitFields)
	d, err := time.ParseDuration(j.Period)
	if err != nil {
		return fmt.Errorf("budget of %s: period %q is not a Go duration", l.Agent, j.Period)
	}
	l.Period = d
	return nil
}

// Validate names what is wrong with l: the error wraps ErrInvalidOption, or
// events.ErrInvalidID for the agent.
func (l Limit) Validate() error {
	if err := events.ValidateID("agent", l.Agent); err != nil {
		return err
	}
	if err := kvstore.CheckKeyID(l.Agent); err != nil {
		return err
	}
	switch {
	case l.Period <= 0:
		return invalid(fmt.Sprintf("budget of %s: period %s: give a positive duration", l.Agent, l.Period))
	case l.Tokens < 0:
		return invalid(fmt.Sprintf("budget of %s: tokens %d is negative", l.Agent, l.Tokens))
	case l.CostUSD < 0 || math.IsNaN(l.CostUSD) || math.IsInf(l.CostUSD, 0):
		return invalid(fmt.Sprintf("budget of %s: cost %v is not a non-negative number", l.Agent, l.CostUSD))
	case l.Tokens == 0 && l.CostUSD == 0:
		return invalid(fmt.Sprintf("budget of %s bounds nothing: give tokens, a cost or both", l.Agent))
	}
	return nil
}

// name is how a budget is named in a cost_limit detail.
func (l Limit) name(session string) string {
	s := "shared budget of agent " + l.Agent
	if l.PerSession {
		s += " session " + session
	}
	return s + " per " + l.Period.String()
}

// Use is what one budget (an agent's, or one session's) used in the
// current period, and the steps under way.
type Use struct {
	Agent   string    `json:"agent"`
	Session string    `json:"session,omitempty"`
	Since   time.Time `json:"since"` // start of the period
	Tokens  int64     `json:"tokens"`
	CostUSD float64   `json:"cost_usd"`
	// MaxStepTokens and MaxStepCost are the largest step charged so far:
	// the estimate of the next step's use.
	MaxStepTokens int64   `json:"max_step_tokens,omitempty"`
	MaxStepCost   float64 `json:"max_step_cost_usd,omitempty"`
	// Reserved holds the steps under way, by run id, with when their
	// reservation lapses.
	Reserved map[string]time.Time `json:"reserved,omitempty"`
}

// Budgets reads and enforces the shared budgets. It implements the loop's
// SharedBudget (Reserve before each model call, Charge after). It is safe
// for concurrent use; keep one, it opens the bucket on first use.
type Budgets struct {
	b   *bus.Bus
	ttl time.Duration
	now func() time.Time

	uses        *kvstore.Bucket // the budgets bucket: uses
	limitsKV    *kvstore.Bucket // the trust bucket: limits
	usageStream lazy.Handle[jetstream.Stream]

	mu      sync.Mutex
	tallies map[string]tally // by usage subject

	lim limits // the limits, followed by a watch
}

// New returns the shared budgets of b's bucket (b.Names().Budgets). It
// does no I/O.
func New(b *bus.Bus) *Budgets {
	return &Budgets{b: b, ttl: DefaultReservationTTL, now: func() time.Time { return time.Now().UTC() }, tallies: map[string]tally{},
		uses:     kvstore.NewBucket(b.JetStream(), b.Names().Budgets, ErrRegistry),
		limitsKV: kvstore.NewBucket(b.JetStream(), b.Names().Trust, ErrRegistry)}
}

func limitKey(agent string) string { return "limit." + agent }

func useKey(l Limit, session string) string {
	if l.PerSession {
		return "use." + l.Agent + "." + session
	}
	return "use." + l.Agent
}

// SetLimit adds or replaces the budget of l.Agent. The use of the current
// period is kept. The entry records who set it (l.By: the connection's
// NATS user as the server authenticated it, l.By's channel, default
// events.ChannelNATS, and note as given) and when (l.At). deploy/nats
// keeps the loop identity from writing limits. The error wraps
// ErrInvalidOption or events.ErrInvalidID for a bad limit, ErrRegistry for
// a bucket failure, or WhoAmI's errors.
func (s *Budgets) SetLimit(ctx context.Context, l Limit) error {
	if err := l.Validate(); err != nil {
		return err
	}
	var given events.Actor
	if l.By != nil {
		given = *l.By
	}
	a, err := actor(ctx, s.b, given)
	if err != nil {
		return err
	}
	l.By, l.At = &a, s.now()
	value, err := json.Marshal(l)
	if err != nil {
		return invalid(err.Error())
	}
	ctx, cancel := deadline.Default(ctx, s.b.Timeout())
	defer cancel()
	kv, err := s.limitsKV.KV(ctx)
	if err != nil {
		return err
	}
	rev, err := kv.Put(ctx, limitKey(l.Agent), value)
	if err != nil {
		return s.limitsKV.Err(ctx, "put "+limitKey(l.Agent)+" in", err)
	}
	s.hold(l.Agent, rev, heldLimit{l: l}, true) // applies here at once
	return nil
}

// RemoveLimit removes the budget of agent (its use records stay until the
// period ends). Its delete marker records who removed it (a Removed
// as JSON; a is filled as SetLimit fills By). The error wraps ErrNotFound
// when it has none, or WhoAmI's errors.
func (s *Budgets) RemoveLimit(ctx context.Context, agent string, a events.Actor) error {
	if err := kvstore.CheckPluginKey(agent); err != nil {
		return err
	}
	a, err := actor(ctx, s.b, a)
	if err != nil {
		return err
	}
	ctx, cancel := deadline.Default(ctx, s.b.Timeout())
	defer cancel()
	kv, err := s.limitsKV.KV(ctx)
	if err != nil {
		return err
	}
	record, _ := json.Marshal(Removed{Agent: agent, By: a, At: s.now()}) // cannot fail
	rev, err := kvstore.DeleteWithRecordRev(ctx, s.b.JetStream(), kv, s.b.Names().Trust, limitKey(agent), "agent "+agent+" has no shared budget", record)
	if err != nil {
		return err
	}
	s.hold(agent, rev, heldLimit{}, false) // applies here at once
	return nil
}

// Removed is the body of the delete marker of a removed budget: who
// removed it, and when.
type Removed struct {
	Agent string       `json:"agent"`
	By    events.Actor `json:"by"`
	At    time.Time    `json:"at"`
}

// Limit returns the budget of agent, and false when it has none.
//
// The limits are followed by a watch from the first call on: once it has
// loaded them, Limit answers from memory. A limit set or removed by
// another client applies once the watch delivers it (milliseconds).
func (s *Budgets) Limit(ctx context.Context, agent string) (Limit, bool, error) {
	if l, ok, err, held := s.held(agent); held {
		return l, ok, err
	}
	kv, err := s.limitsKV.KV(ctx)
	if err != nil {
		return Limit{}, false, err
	}
	s.follow(ctx, kv)
	if l, ok, err, held := s.held(agent); held {
		return l, ok, err
	}
	e, err := kv.Get(ctx, limitKey(agent))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Limit{}, false, nil
	}
	if err != nil {
		return Limit{}, false, s.limitsKV.Err(ctx, "get "+limitKey(agent)+" from", err)
	}
	l, err := decodeLimit(e)
	return l, err == nil, err
}

// decodeLimit reads a budget from its entry in the limits bucket. The
// error wraps ErrRegistry.
func decodeLimit(e jetstream.KeyValueEntry) (Limit, error) {
	var l Limit
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		return Limit{}, fmt.Errorf("%w: budget %s: %v", ErrRegistry, e.Key(), err)
	}
	return l, nil
}

// List returns every budget and every use record, by agent (then session).
// A use whose period is over shows as zero for the current period.
func (s *Budgets) List(ctx context.Context) ([]Limit, []Use, error) {
	ctx, cancel := deadline.Default(ctx, s.b.Timeout())
	defer cancel()
	lkv, err := s.limitsKV.KV(ctx)
	if err != nil {
		return nil, nil, err
	}
	kv, err := s.uses.KV(ctx)
	if err != nil {
		return nil, nil, err
	}
	var limits []Limit
	var uses []Use
	var bad error
	err = kvstore.ReadAll(ctx, lkv, func(e jetstream.KeyValueEntry) {
		if !strings.HasPrefix(e.Key(), "limit.") {
			return
		}
		l, err := decodeLimit(e)
		if err != nil {
			bad = cmp.Or(bad, err)
			return
		}
		limits = append(limits, l)
	})
	if err != nil {
		return nil, nil, s.limitsKV.Err(ctx, "list", err)
	}
	err = kvstore.ReadAll(ctx, kv, func(e jetstream.KeyValueEntry) {
		if strings.HasPrefix(e.Key(), "use.") {
			var u Use
			if err := json.Unmarshal(e.Value(), &u); err == nil {
				uses = append(uses, u)
			}
		}
	})
	if err != nil {
		return nil, nil, s.uses.Err(ctx, "list", err)
	}
	byAgent := map[string]Limit{}
	for _, l := range limits {
		byAgent[l.Agent] = l
	}
	now := s.now()
	for i := range uses {
		if l, ok := byAgent[uses[i].Agent]; ok {
			uses[i].roll(l, now)
			t, err := s.spent(ctx, l, uses[i].Session, uses[i].Since)
			if err != nil {
				return nil, nil, err
			}
			uses[i].Tokens, uses[i].CostUSD = t.tokens, t.costUSD
		}
	}
	slices.SortFunc(limits, func(a, b Limit) int { return cmp.Compare(a.Agent, b.Agent) })
	slices.SortFunc(uses, func(a, b Use) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Session, b.Session))
	})
	return limits, uses, bad
}

// roll starts a new period when the recorded one is over, and drops lapsed
// reservations.
func (u *Use) roll(l Limit, now time.Time) {
	start := now.Truncate(l.Period)
	if u.Since.Before(start) {
		u.Since, u.Tokens, u.CostUSD = start, 0, 0
	}
	for run, until := range u.Reserved {
		if !now.Before(until) {
			delete(u.Reserved, run)
		}
	}
}

// over names the bound u has reached ("" when none).
func (u *Use) over(l Limit, session string) string {
	switch {
	case l.Tokens > 0 && u.Tokens >= l.Tokens:
		return fmt.Sprintf("%s: tokens used %d of %d", l.name(session), u.Tokens, l.Tokens)
	case l.CostUSD > 0 && u.CostUSD >= l.CostUSD:
		return fmt.Sprintf("%s: cost used $%.6f of $%.6f", l.name(session), u.CostUSD, l.CostUSD)
	}
	return ""
}

// fits reports whether one more step fits beside the n under way, each
// estimated at the largest step so far.
func (u *Use) fits(l Limit, n int) bool {
	if u.MaxStepTokens == 0 && u.MaxStepCost == 0 {
		return n == 0 // no estimate yet: one step at a time
	}
	k := float64(n + 1)
	return (l.Tokens == 0 || float64(u.Tokens)+k*float64(u.MaxStepTokens) <= float64(l.Tokens)) &&
		(l.CostUSD == 0 || u.CostUSD+k*u.MaxStepCost <= l.CostUSD)
}

// Reserve admits the next model call of run against the budget of agent
// (or of its session): it returns the budget's name and use in exceeded
// when the budget is used up, or when the next step, estimated at the
// largest step so far, would exceed it and no other step is under way.
// While other steps under way leave no room for it, it waits for them (a
// CAS retry with back-off) until ctx ends. An admitted step is reserved
// until Charge (or DefaultReservationTTL). An agent without a budget is
// admitted without a write. Errors wrap ErrRegistry or ctx's error.
func (s *Budgets) Reserve(ctx context.Context, agent, session, run string) (exceeded string, err error) {
	l, ok, err := s.Limit(ctx, agent)
	if err != nil || !ok {
		return "", err
	}
	wait := 2 * time.Millisecond
	for {
		var over string
		waiting := false
		err := s.update(ctx, l, agent, session, func(u *Use, now time.Time) bool {
			if over = u.over(l, session); over != "" {
				return false
			}
			if !u.fits(l, len(u.Reserved)) {
				if len(u.Reserved) == 0 {
					over = fmt.Sprintf("%s: next step (about %d tokens, $%.6f) would pass it: used %d tokens, $%.6f",
						l.name(session), u.MaxStepTokens, u.MaxStepCost, u.Tokens, u.CostUSD)
				} else {
					waiting = true
				}
				return false
			}
			if u.Reserved == nil {
				u.Reserved = map[string]time.Time{}
			}
			u.Reserved[run] = now.Add(s.ttl)
			return true
		})
		if err != nil || !waiting {
			return over, err
		}
		select {
		case <-time.After(wait):
			wait = min(2*wait, 100*time.Millisecond)
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for room in the %s: %w", l.name(session), ctx.Err())
		}
	}
}

// Charge adds what run's step used to the budget of agent (or of its
// session) and ends the step's reservation; zero usage only ends it (a
// model call that failed). Errors wrap ErrRegistry or ctx's error.
func (s *Budgets) Charge(ctx context.Context, agent, session, run string, used events.Usage) error {
	l, ok, err := s.Limit(ctx, agent)
	if err != nil || !ok {
		return err
	}
	tokens := int64(used.InputTokens + used.OutputTokens)
	if tokens > 0 || used.CostUSD > 0 {
		if err := s.record(ctx, l, session, run, tokens, used.CostUSD); err != nil {
			return err
		}
	}
	return s.update(ctx, l, agent, session, func(u *Use, _ time.Time) bool {
		delete(u.Reserved, run)
		u.MaxStepTokens = max(u.MaxStepTokens, tokens)
		u.MaxStepCost = max(u.MaxStepCost, used.CostUSD)
		return true
	})
}

// update applies change to the budget's use with compare-and-set, reading
// again on conflict; change reports whether to write.
func (s *Budgets) update(ctx context.Context, l Limit, agent, session string, change func(*Use, time.Time) bool) error {
	kv, err := s.uses.KV(ctx)
	if err != nil {
		return err
	}
	key := useKey(l, session)
	for {
		var u Use
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return s.uses.Err(ctx, "get "+key+" from", err)
		default:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &u); err != nil {
				return fmt.Errorf("%w: budget use %s: %v", ErrRegistry, key, err)
			}
		}
		now := s.now()
		u.Agent = agent
		if l.PerSession {
			u.Session = session
		}
		u.roll(l, now)
		// What the budget used is what its records add up to, whatever
		// the entry says.
		t, err := s.spent(ctx, l, session, u.Since)
		if err != nil {
			return err
		}
		u.Tokens, u.CostUSD = t.tokens, t.costUSD
		if !change(&u, now) {
			return nil
		}
		value, err := json.Marshal(u)
		if err != nil {
			return fmt.Errorf("%w: budget use %s: %v", ErrRegistry, key, err)
		}
		if rev == 0 {
			_, err = kv.Create(ctx, key, value)
		} else {
			_, err = kv.Update(ctx, key, value, rev)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			continue // another worker wrote first: read again
		default:
			return s.uses.Err(ctx, "write "+key+" in", err)
		}
	}
}

// Check returns nil when the budgets bucket can be opened, or an error
// wrapping ErrRegistry (a bus provisioned by an older hookbus has none).
func (s *Budgets) Check(ctx context.Context) error {
	ctx, cancel := deadline.Default(ctx, s.b.Timeout())
	defer cancel()
	_, err := s.uses.KV(ctx)
	return err
}

// actor fills a with who b's connection is (bus.Caller.Actor).
func actor(ctx context.Context, b *bus.Bus, a events.Actor) (events.Actor, error) {
	c, err := b.WhoAmI(ctx)
	if err != nil {
		return a, err
	}
	return c.Actor(a), nil
}
