package claudecode

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Factory makes the interceptor of one handler of a settings file, given
// the handler and the registration Register gives it (its plugin name,
// stage, order, timeout and matcher). Packages command and httphook
// provide the factories of the "command" and "http" types; the prompt and
// agent hook packages theirs, which FromRaw adapts.
type Factory func(h Handler, reg interceptors.Registration) (interceptors.Interceptor, error)

// FromRaw adapts a factory that reads only the handler's JSON object.
func FromRaw(fn func(handler json.RawMessage, reg interceptors.Registration) (interceptors.Interceptor, error)) Factory {
	return func(h Handler, reg interceptors.Registration) (interceptors.Interceptor, error) {
		return fn(h.Raw, reg)
	}
}

// Options configure Register.
type Options struct {
	// Factories make the interceptors of each handler type ("command",
	// "http", "prompt", "agent"). A handler of a type without one is an
	// error.
	Factories map[string]Factory
	// Prefix starts the plugin names (default "claude"): a handler is
	// registered as <prefix>-<Event>-<group>-<index> ("claude-PreToolUse-0-1"),
	// the second source's as <prefix>2-..., and so on.
	Prefix string
	// Order is the order of the first handler; each next one, in the
	// sources' order, gets the next number, so the handlers of one event
	// run in the order the files list them.
	Order int
	// Logger logs observing hooks' failures (default: discard).
	Logger *slog.Logger
}

// Hooks is what Register registered: the chain registrations of the
// handlers of events that intercept, and the observers of the others.
type Hooks struct {
	regs       []interceptors.Registration
	unregister []func()
	observers  map[events.Stage][]*observer
	n          int
	logger     *slog.Logger
	// started holds the runs whose SessionStart hooks ran at their
	// intake, so that their run.started does not run them again.
	started sync.Map
}

// observer is a handler of an observe-only event.
type observer struct {
	event HookEvent
	h     Handler
	reg   interceptors.Registration
	ic    interceptors.Interceptor
}

// Register registers the handlers of the sources on chain, in order
// (Options.Order), each as its own plugin: the hooks of one event run as an
// ordered chain, each seeing the input as the earlier ones left it (Claude
// Code runs them in parallel). A handler of an event whose stage accepts
// interceptors (UserPromptSubmit, PreToolUse, PostToolUse, SubagentStart,
// Stop) is registered with the file's timeout (Uncapped: Claude Code's
// 600s default is over the bus' 30s cap), policy ignore and its matcher as
// the Tools matcher, so the chain skips what it does not match. A handler
// of any other mapped event observes: it runs after its stage's event is
// appended when the loop's Emitter is wrapped by Hooks.Emitter.
//
// Sources with DisableAllHooks register nothing. An error (a handler type
// without a factory, a factory's error, a registration the chain refuses)
// wraps ErrSettings, names the handler, and leaves nothing registered.
func Register(chain *interceptors.Chain, sources []*Settings, opts Options) (*Hooks, error) {
	opts.Prefix = cmp.Or(opts.Prefix, "claude")
	if err := events.ValidateID("plugin prefix", opts.Prefix); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSettings, err)
	}
	hs := &Hooks{observers: map[events.Stage][]*observer{}, logger: opts.Logger}
	hs.logger = cmp.Or(hs.logger, slog.New(slog.DiscardHandler))
	order := opts.Order
	for k, s := range sources {
		if s == nil || s.DisableAllHooks {
			continue
		}
		prefix := opts.Prefix
		if k > 0 {
			prefix = fmt.Sprintf("%s%d", opts.Prefix, k+1)
		}
		for _, h := range s.Handlers {
			if err := hs.add(chain, h, prefix, order, opts.Factories); err != nil {
				hs.Unregister()
				return nil, err
			}
			order++
		}
	}
	return hs, nil
}

func (hs *Hooks) add(chain *interceptors.Chain, h Handler, prefix string, order int, factories map[string]Factory) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrSettings, h.Where, fmt.Sprintf(format, args...))
	}
	f := factories[h.Type]
	if f == nil {
		return fail("no factory for hooks of type %q (this worker runs %s)", h.Type, typeList(factories))
	}
	stages := h.Event.Stages()
	reg := interceptors.Registration{
		Plugin: fmt.Sprintf("%s-%s-%d-%d", prefix, h.Event, h.Group, h.Index),
		Stage:  stages[0], Order: order, Timeout: h.Timeout, Uncapped: true,
		Policy: interceptors.PolicyIgnore, Mode: interceptors.ModeMutate,
	}
	if h.Event.toolMatched() && h.Compiled != nil {
		reg.Tools = h.Compiled.Tools()
	}
	ic, err := f(h, reg)
	if err != nil {
		return fail("%v", err)
	}
	hs.n++
	if !h.Event.Intercepts() {
		o := &observer{event: h.Event, h: h, reg: reg.WithDefaults(), ic: ic}
		for _, st := range stages {
			if h.Event == SessionStart && st == events.StageIntake {
				continue // run at intake by the chain, before the prompt's hooks
			}
			hs.observers[st] = append(hs.observers[st], o)
		}
		if h.Event == SessionStart {
			return hs.addSessionStart(chain, o, order)
		}
		return nil
	}
	unregister, err := chain.Register(reg, ic)
	if err != nil {
		return fail("%v", err)
	}
	hs.regs = append(hs.regs, reg)
	hs.unregister = append(hs.unregister, unregister)
	return nil
}

// Registrations returns the chain registrations, in order.
func (hs *Hooks) Registrations() []interceptors.Registration {
	return append([]interceptors.Registration(nil), hs.regs...)
}

// Len counts the handlers registered, observers included.
func (hs *Hooks) Len() int { return hs.n }

// Unregister removes the chain registrations (idempotent).
func (hs *Hooks) Unregister() {
	for _, u := range hs.unregister {
		u()
	}
}

func typeList(factories map[string]Factory) string {
	types := slices.Sorted(maps.Keys(factories))
	if len(types) == 0 {
		return "none"
	}
	return strings.Join(types, ", ")
}

// sessionStartLead puts the SessionStart hooks registered on intake before
// every other interceptor of the stage: they fire when the session begins.
const sessionStartLead = 1 << 30

// addSessionStart registers o, a SessionStart hook, on intake ahead of the
// chain (the prompt's UserPromptSubmit hooks included), observing: it runs
// on a run's first attempt before any hook of the prompt, and what it
// answers changes nothing (a failure is logged and recorded). Its
// run.started observer runs it for attempts without an intake (a resumed
// one, a compaction).
func (hs *Hooks) addSessionStart(chain *interceptors.Chain, o *observer, order int) error {
	reg := o.reg
	reg.Stage, reg.Order, reg.Tools = events.StageIntake, order-sessionStartLead, ""
	unregister, err := chain.Register(reg, interceptors.Func(func(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
		hs.started.Store(req.Event.RunID, true)
		in, err := NewInput(SessionStart, req.Event, Env{})
		if err != nil {
			return nil, err
		}
		if o.h.Compiled != nil && !o.h.Compiled.Match(in.MatchTarget()) {
			return nil, nil
		}
		_, err = o.ic.Intercept(ctx, req)
		return nil, err
	}))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSettings, o.h.Where, err)
	}
	hs.regs = append(hs.regs, reg)
	hs.unregister = append(hs.unregister, unregister)
	return nil
}
