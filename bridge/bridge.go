package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/interceptors"
)

// Store is the record a bridge reads and appends to. *bus.Bus implements
// it.
type Store interface {
	// SessionEvents reads a session's events, in stream order, each with
	// its stream sequence.
	SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error)
	// AppendAfter appends e on condition that the session's last event is
	// at stream sequence seen, and returns e's; a *bus.FencedError
	// (errors.Is bus.ErrFenced) when it is not.
	AppendAfter(ctx context.Context, e *events.Event, seen uint64) (uint64, error)
}

// Hooks are the interceptors a bridge runs, as the loop runs them.
// *interceptors.Chain implements it (kept in step with the registry by
// remote.SyncHooks).
type Hooks interface {
	Matches(stage events.Stage, tool, agent string) int
	Run(ctx context.Context, ev *events.Event) (*interceptors.ChainResult, error)
}

// Defaults of Config.
const (
	DefaultAgent  = "claude-code"
	DefaultSource = "hookbus/claude-code"
	// DefaultTimeout bounds one Handle: keep it under the timeout of the
	// hook in Claude Code's settings (600 s when none is given).
	DefaultTimeout = 30 * time.Second
	// MaxAttempts bounds how often one event's appends are tried again
	// after another writer appended to the session first.
	MaxAttempts = 64
)

// Config configures a Bridge.
type Config struct {
	// Store records the events (required).
	Store Store
	// Hooks decide (nil: none; every event is only recorded).
	Hooks Hooks
	// Agent is the agent id Claude Code's sessions are recorded under
	// (default DefaultAgent).
	Agent string
	// Source is the CloudEvent source of the events (default
	// DefaultSource).
	Source string
	// Policy is what an event that cannot be recorded or decided in time
	// gets (Outage): PolicyIgnore (default) lets it proceed, with a
	// warning; PolicyFail blocks it.
	Policy interceptors.Policy
	// Timeout bounds one Handle (default DefaultTimeout).
	Timeout time.Duration
	// Answer changes how outcomes are worded (claudecode.AnswerOptions).
	Answer claudecode.AnswerOptions
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Bridge records Claude Code's hook events and answers them. It keeps no
// state between events and is safe for concurrent use.
type Bridge struct {
	cfg Config
}

// New returns a Bridge. It does no I/O; the error wraps ErrInvalidConfig.
func New(cfg Config) (*Bridge, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: no Store", ErrInvalidConfig)
	}
	if cfg.Agent == "" {
		cfg.Agent = DefaultAgent
	}
	if err := events.ValidateID("agent", cfg.Agent); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.Source == "" {
		cfg.Source = DefaultSource
	}
	switch cfg.Policy {
	case "":
		cfg.Policy = interceptors.PolicyIgnore
	case interceptors.PolicyIgnore, interceptors.PolicyFail:
	default:
		return nil, fmt.Errorf("%w: policy %q (want ignore or fail)", ErrInvalidConfig, cfg.Policy)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: negative Timeout", ErrInvalidConfig)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Bridge{cfg: cfg}, nil
}

// Handle records the event of one Claude Code hook input, runs the
// interceptors that match it, and returns Claude Code's answer. It
// returns before ctx's deadline and the bridge's Timeout, whichever comes
// first, with an answer in every case but bad input:
//
//   - an event hookbus records as no stage (Notification, events it does
//     not map): "{}", nothing recorded;
//   - an input that does not map (no session_id, a tool event without
//     tool_name, ...): nil and an error wrapping claudecode.ErrBadInput;
//   - the store or the interceptors not answering in time, or failing:
//     the outage policy's answer (Outage) and an error wrapping
//     ErrUnrecorded; when the interceptors had decided but the record
//     could not be written, their answer, with a warning.
func (b *Bridge) Handle(ctx context.Context, in *claudecode.Input) (*claudecode.Output, error) {
	m, err := in.ToHookbus()
	if errors.Is(err, claudecode.ErrUnmapped) {
		return &claudecode.Output{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := events.ValidateID("session", in.SessionID); err != nil {
		return nil, fmt.Errorf("%w: session_id: %w", claudecode.ErrBadInput, err)
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	type result struct {
		out *claudecode.Output
		err error
	}
	var decided atomic.Pointer[claudecode.Output]
	done := make(chan result, 1)
	go func() {
		out, err := b.handle(ctx, in, m, &decided)
		done <- result{out, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		r.err = ctx.Err()
	}
	if r.err == nil {
		return r.out, nil
	}
	err = fmt.Errorf("%w: %s of session %s: %w", ErrUnrecorded, in.HookEventName, in.SessionID, r.err)
	b.cfg.Logger.Warn("bridge: event not recorded", "event", in.HookEventName, "session", in.SessionID, "err", r.err)
	if d := decided.Load(); d != nil {
		return warn(d, fmt.Sprintf("hookbus: this event was decided but not recorded (%v)", r.err)), err
	}
	return Outage(in, b.cfg.Policy, r.err), err
}

// handle does Handle's work on ctx; decided is set once the interceptors
// have decided.
func (b *Bridge) handle(ctx context.Context, in *claudecode.Input, m *claudecode.Mapped, decided *atomic.Pointer[claudecode.Output]) (*claudecode.Output, error) {
	evs, err := b.cfg.Store.SessionEvents(ctx, b.cfg.Agent, in.SessionID)
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	st := fold(evs)
	p, err := b.newPlan(in, m)
	if err != nil {
		return nil, err
	}
	var out *interceptors.ChainResult
	if b.cfg.Hooks != nil && m.Stage.Interceptable() {
		if n := b.cfg.Hooks.Matches(m.Stage, m.Subject, b.cfg.Agent); n > 0 {
			// The interceptors see the event as it will be stored if
			// nobody else appends first: its run, and its seq once every
			// matching one has answered (as the loop does).
			p.assign(st)
			p.main.Seq += uint64(n)
			if out, err = b.cfg.Hooks.Run(ctx, p.main); err != nil {
				return nil, fmt.Errorf("hooks on %s: %w", m.Stage, err)
			}
			if err := p.decided(out, b.cfg.Source); err != nil {
				return nil, err
			}
		}
	}
	answer, err := claudecode.Answer(in, out, b.cfg.Answer)
	if err != nil {
		return nil, err
	}
	decided.Store(answer)
	if err := b.append(ctx, p, st); err != nil {
		return nil, err
	}
	return answer, nil
}

// append appends the plan's events, each fenced on the one before it,
// reading the session again and assigning runs and seqs anew when another
// writer appended first.
func (b *Bridge) append(ctx context.Context, p *plan, st *state) error {
	for attempt := 1; ; attempt++ {
		seen := st.last
		lost := false
		for _, e := range p.assign(st) {
			seq, err := b.cfg.Store.AppendAfter(ctx, e, seen)
			if err != nil {
				if !isFenced(err) {
					return fmt.Errorf("append %s: %w", e.Stage, err)
				}
				lost = true
				break
			}
			st.add(e, seq)
			seen = seq
		}
		if !lost {
			return nil
		}
		if attempt == MaxAttempts {
			return fmt.Errorf("session %s: another writer appended first %d times", p.main.SessionID, attempt)
		}
		evs, err := b.cfg.Store.SessionEvents(ctx, b.cfg.Agent, p.main.SessionID)
		if err != nil {
			return fmt.Errorf("read session: %w", err)
		}
		st = fold(evs)
	}
}

// isFenced reports whether err is an append refused because the session
// changed since it was read.
func isFenced(err error) bool { return errors.Is(err, bus.ErrFenced) }

// warn returns o with msg added to its systemMessage.
func warn(o *claudecode.Output, msg string) *claudecode.Output {
	c := *o
	if c.SystemMessage != "" {
		c.SystemMessage += "\n"
	}
	c.SystemMessage += msg
	return &c
}
