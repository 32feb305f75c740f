package interceptors

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hookbus/hookbus/events"
)

// Chain holds the interceptors of every stage in run order and runs them on
// events (Run). Registering is safe while Runs go on: each Run uses the
// registrations of the moment it starts.
//
// A chain made by Child adds per-run registrations on top of its parent's:
// it sees the parent's registrations as they change, and its own disappear
// with it when the run drops it.
type Chain struct {
	parent *Chain
	trust  Trust
	logger *slog.Logger
	seq    *atomic.Uint64 // registration order, shared by a chain and its children

	mu   sync.Mutex // serialises writers of snap (and, on a root, disabled)
	snap atomic.Pointer[snapshot]

	// Held by the root chain only (see root).
	disabled   atomic.Pointer[map[string]Disabled] // nil: none
	shadowSink ShadowSink
}

// snapshot is an immutable view of one chain's own registrations, per
// interceptable stage (events.Stage.InterceptIndex), each list in run order.
type snapshot [][]*entry

func newSnapshot() *snapshot {
	s := make(snapshot, numStages)
	return &s
}

type entry struct {
	reg           Registration // defaults applied
	ic            Interceptor
	seq           uint64
	bound         bool    // ic is ContextBound: called on the chain's goroutine
	tools, agents matcher // reg.Tools and reg.Agents, compiled
	kinds         matcher // reg.Kinds, compiled
}

func (e *entry) matches(tool string, kind events.ActionKind, agent string) bool {
	return e.tools.match(tool) && e.kinds.matchKind(kind) && e.agents.match(agent)
}

// before reports whether e runs before o: lower Order first, then earlier
// registration.
func (e *entry) before(o *entry) bool {
	if e.reg.Order != o.reg.Order {
		return e.reg.Order < o.reg.Order
	}
	return e.seq < o.seq
}

// Option configures a Chain.
type Option func(*Chain)

// WithTrust sets who may register on privileged stages besides built-ins.
// Without it (or with nil) only built-in interceptors may.
func WithTrust(t Trust) Option { return func(c *Chain) { c.trust = t } }

// WithLogger sets the logger of failures (warn when failed open, error when
// failed closed) and decisions (debug). The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *Chain) {
		if l != nil {
			c.logger = l
		}
	}
}

// NewChain returns an empty chain.
func NewChain(opts ...Option) *Chain {
	c := &Chain{logger: slog.New(slog.DiscardHandler), seq: new(atomic.Uint64)}
	for _, o := range opts {
		o(c)
	}
	c.snap.Store(newSnapshot())
	return c
}

// Child returns a chain for one run: it runs its parent's registrations
// (live: later changes to the parent show) together with its own, in one
// order. Registering on the child does not touch the parent; when the run
// ends, drop the child. There is nothing to close.
func (c *Chain) Child() *Chain {
	ch := &Chain{parent: c, trust: c.trust, logger: c.logger, seq: c.seq}
	ch.snap.Store(newSnapshot())
	return ch
}

// Register adds ic under reg and returns a function that removes this
// registration (idempotent). The error wraps ErrInvalidRegistration for a
// bad field (see Registration.Validate) or a nil ic, ErrPrivileged when a
// plugin neither built in nor granted by the chain's Trust registers on a
// privileged stage, and ErrDuplicate when the plugin is already registered
// on the stage in this chain.
func (c *Chain) Register(reg Registration, ic Interceptor) (unregister func(), err error) {
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	if ic == nil {
		return nil, fmt.Errorf("%w: plugin %s on %s: nil interceptor", ErrInvalidRegistration, reg.Plugin, reg.Stage)
	}
	if reg.Stage.Privileged() && !reg.Builtin && (c.trust == nil || !c.trust.Privileged(reg.Plugin)) {
		return nil, fmt.Errorf("%w: plugin %s lacks privileged_hooks permission for stage %s", ErrPrivileged, reg.Plugin, reg.Stage)
	}
	i := reg.Stage.InterceptIndex()
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.snap.Load()
	if slices.ContainsFunc(old[i], func(e *entry) bool { return e.reg.Plugin == reg.Plugin }) {
		return nil, fmt.Errorf("%w: plugin %s on %s", ErrDuplicate, reg.Plugin, reg.Stage)
	}
	_, bound := ic.(ContextBound)
	e := &entry{reg: reg.WithDefaults(), ic: ic, seq: c.seq.Add(1), bound: bound}
	e.tools, _ = compileMatcher(reg.Tools) // checked by Validate
	e.agents, _ = compileMatcher(reg.Agents)
	e.kinds, _ = compileKinds(reg.Kinds)
	at := slices.IndexFunc(old[i], e.before)
	if at < 0 {
		at = len(old[i])
	}
	next := slices.Clone(old)
	next[i] = slices.Insert(slices.Clone(old[i]), at, e)
	c.snap.Store(&next)
	c.logger.Debug("interceptor registered", "plugin", reg.Plugin, "stage", reg.Stage, "order", reg.Order)
	return func() { c.remove(i, func(o *entry) bool { return o == e }) }, nil
}

// Unregister removes plugin's registration on stage from this chain (not
// from its parent) and reports whether there was one.
func (c *Chain) Unregister(stage events.Stage, plugin string) bool {
	i := stage.InterceptIndex()
	if i < 0 {
		return false
	}
	return c.remove(i, func(e *entry) bool { return e.reg.Plugin == plugin })
}

func (c *Chain) remove(i int, match func(*entry) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.snap.Load()
	j := slices.IndexFunc(old[i], match)
	if j < 0 {
		return false
	}
	next := slices.Clone(old)
	next[i] = slices.Delete(slices.Clone(old[i]), j, j+1)
	c.snap.Store(&next)
	return true
}

// Registrations returns the registrations of stage, the parent's included,
// in run order, with defaults applied.
func (c *Chain) Registrations(stage events.Stage) []Registration {
	i := stage.InterceptIndex()
	if i < 0 {
		return nil
	}
	list := c.entries(i)
	regs := make([]Registration, len(list))
	for j, e := range list {
		regs[j] = e.reg
	}
	return regs
}

// Has reports whether any registration of stage (the parent's included)
// matches tool and agent (Matches): when it does not, the loop skips the
// stage's interception entirely. It takes no lock and does not allocate.
func (c *Chain) Has(stage events.Stage, tool, agent string) bool {
	return c.Matches(stage, tool, agent) > 0
}

// Matches counts the registrations of stage (the parent's included) that
// match tool and agent, for an event whose call carries no action (a
// registration with Kinds does not count): MatchesCall with no kind.
func (c *Chain) Matches(stage events.Stage, tool, agent string) int {
	return c.MatchesCall(stage, tool, "", agent)
}

// MatchesCall counts the registrations of stage (the parent's included)
// that match tool, the kind of its call's action and agent: how many
// interceptors Run calls on such an event when none ends the chain early.
// It takes no lock and does not allocate.
func (c *Chain) MatchesCall(stage events.Stage, tool string, kind events.ActionKind, agent string) int {
	i := stage.InterceptIndex()
	if i < 0 {
		return 0
	}
	n := 0
	for ch := c; ch != nil; ch = ch.parent {
		for _, e := range (*ch.snap.Load())[i] {
			if e.matches(tool, kind, agent) {
				n++
			}
		}
	}
	return n
}

// entries returns the registrations of stage index i in run order, the
// ancestors' merged in. The result must not be modified.
func (c *Chain) entries(i int) []*entry {
	own := (*c.snap.Load())[i]
	if c.parent == nil {
		return own
	}
	inherited := c.parent.entries(i)
	switch {
	case len(own) == 0:
		return inherited
	case len(inherited) == 0:
		return own
	}
	merged := make([]*entry, 0, len(inherited)+len(own))
	a, b := inherited, own
	for len(a) > 0 && len(b) > 0 {
		if b[0].before(a[0]) {
			merged, b = append(merged, b[0]), b[1:]
		} else {
			merged, a = append(merged, a[0]), a[1:]
		}
	}
	return append(append(merged, a...), b...)
}

// numStages is how many stages accept interceptors: the length of a
// snapshot.
var numStages = len(events.InterceptableStages())

// RegisterFunc registers fn as plugin's interceptor on stage with the
// default registration (order 0, 5s timeout, policy ignore, mode mutate,
// every tool and agent). For anything else (matchers, a policy, builtin) use Register. Errors are
// Register's.
func (c *Chain) RegisterFunc(stage events.Stage, plugin string, fn Func) (unregister func(), err error) {
	return c.Register(Registration{Plugin: plugin, Stage: stage}, fn)
}
