package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// Store is the record a bridge reads and appends to. *bus.Bus implements
// it.
type Store interface {
	// LastEvent returns the session's last event of stage (of any stage
	// when stage is ""), with its stream sequence; nil when there is none.
	LastEvent(ctx context.Context, agent, session string, stage events.Stage) (*events.Event, error)
	// SessionEvents reads a session's events, in stream order, each with
	// its stream sequence.
	SessionEvents(ctx context.Context, agent, session string) ([]*events.Event, error)
	// AppendAfter appends e on condition that the session's last event is
	// at stream sequence seen, and returns e's; a *bus.FencedError
	// (errors.Is bus.ErrFenced) when it is not.
	AppendAfter(ctx context.Context, e *events.Event, seen uint64) (uint64, error)
	// WaitEvent returns the first event of the session's stage stored at
	// stream sequence from or later for which match is true, waiting for
	// it until ctx is done.
	WaitEvent(ctx context.Context, agent, session string, stage events.Stage, from uint64, match func(*events.Event) bool) (*events.Event, error)
}

// Hooks are the interceptors a bridge runs, as the loop runs them.
// *interceptors.Chain implements it (kept in step with the registry by
// remote.SyncHooks).
type Hooks interface {
	MatchesCall(stage events.Stage, tool string, kind events.ActionKind, agent string) int
	Run(ctx context.Context, ev *events.Event) (*interceptors.ChainResult, error)
}

// Defaults of Config.
const (
	DefaultAgent  = claudecode.DefaultAgent
	DefaultSource = "hookbus/claude-code"
	// DefaultTimeout bounds one event: keep it under the timeout of the
	// hook in the harness's settings. An event the harness waits less for
	// (harness.Input.Limit) is answered within that (harness.Within).
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
	// Harness is the coding agent whose hook inputs the bridge reads
	// (default Claude Code: claudecode.Harness{Options: Answer}).
	Harness harness.Protocol
	// Agent is the agent id the harness's sessions are recorded under
	// (default the harness's Agent: claude-code, gemini-cli, codex-cli).
	Agent string
	// Source is the CloudEvent source of the events (default
	// "hookbus/" and the default agent id).
	Source string
	// Policy is what an event that cannot be recorded or decided in time
	// gets (the harness's Outage): PolicyIgnore (default) lets it proceed,
	// with a warning; PolicyFail blocks it. A permission request nobody
	// answers in time is denied under PolicyFail, and left to the
	// harness's own prompt under PolicyIgnore.
	Policy interceptors.Policy
	// Timeout bounds one event (default DefaultTimeout), a permission
	// request's wait for an answer included.
	Timeout time.Duration
	// Answer changes how Claude Code's outcomes are worded (for the
	// default harness and Handle).
	Answer claudecode.AnswerOptions
	// Cache, when given, remembers where the sessions the bridge appended
	// to stand, so that their next events are appended without reading
	// the session first (for a long-lived process: loop gateway). nil: each
	// event reads its session's last event.
	Cache *Cache
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Bridge records a coding agent's hook events and answers them. It keeps
// no state between events but its Config's Cache, and is safe for
// concurrent use.
type Bridge struct {
	cfg Config
}

// New returns a Bridge. It does no I/O; the error wraps ErrInvalidConfig.
func New(cfg Config) (*Bridge, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: no Store", ErrInvalidConfig)
	}
	if cfg.Harness == nil {
		cfg.Harness = claudecode.Harness{Options: cfg.Answer}
	}
	if cfg.Agent == "" {
		cfg.Agent = cfg.Harness.Agent()
	}
	if err := events.ValidateID("agent", cfg.Agent); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.Source == "" {
		cfg.Source = "hookbus/" + cfg.Harness.Agent()
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
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	return &Bridge{cfg: cfg}, nil
}

// Serve reads one hook input of the bridge's harness (raw) and handles it
// (HandleInput). An input that cannot be read is an error wrapping
// harness.ErrBadInput, and no reply.
func (b *Bridge) Serve(ctx context.Context, raw []byte) (*harness.Reply, error) {
	in, err := b.cfg.Harness.Parse(raw)
	if err != nil {
		return nil, err
	}
	return b.HandleInput(ctx, in)
}

// HandleInput records the event of one hook input, runs the interceptors
// that match it (or, for a permission request, waits for its approval),
// and returns the harness's answer. It returns before ctx's deadline, the
// bridge's Timeout and the harness's limit for the event (Within),
// whichever comes first, with an answer in every case but bad input:
//
//   - an input that does not map (no session_id, a tool event without
//     tool_name, ...): nil and an error wrapping harness.ErrBadInput;
//   - the store or the interceptors not answering in time, or failing:
//     the outage policy's answer (Input.Outage) and an error wrapping
//     ErrUnrecorded; when the interceptors had decided but the record
//     could not be written, their answer, with a warning.
func (b *Bridge) HandleInput(ctx context.Context, in harness.Input) (*harness.Reply, error) {
	out, err := b.decide(ctx, in)
	return answer(b.cfg.Policy, out, err, in.Answer, in.Outage)
}

// Handle is HandleInput for a Claude Code hook input, its answer as
// Claude Code's Output (an event recorded as a harness.event answers
// {}: an http hook's empty answer).
func (b *Bridge) Handle(ctx context.Context, in *claudecode.Input) (*claudecode.Output, error) {
	out, err := b.decide(ctx, claudecode.Bridged(in, b.cfg.Answer))
	say := func(out *harness.Outcome) (*claudecode.Output, error) {
		return claudecode.AnswerOutcome(in, out, b.cfg.Answer)
	}
	outage := func(policy interceptors.Policy, cause error) *claudecode.Output {
		return claudecode.OutageAnswer(in, policy, cause)
	}
	return answer(b.cfg.Policy, out, err, say, outage)
}

// answer words decide's outcome (out, err) with say. When the interceptors
// had decided but the event was not recorded, it is their outcome with a
// warning; when they had not, or it cannot be worded, the outage answer
// under policy. Either way the error is decide's. Bad input has no answer.
func answer[R any](policy interceptors.Policy, out *harness.Outcome, err error, say func(*harness.Outcome) (R, error), outage func(interceptors.Policy, error) R) (R, error) {
	var u *unrecorded
	switch {
	case err == nil:
		return say(out)
	case errors.As(err, &u):
		if u.decided != nil {
			d := *u.decided
			d.Warnings = append(append([]string(nil), d.Warnings...), fmt.Sprintf("hookbus: this event was decided but not recorded (%v)", u.cause))
			if r, aerr := say(&d); aerr == nil {
				return r, err
			}
		}
		return outage(policy, u.cause), err
	default:
		var none R
		return none, err
	}
}

// unrecorded is decide's error for an event not recorded or decided in
// time; decided is the outcome when the interceptors had decided.
type unrecorded struct {
	cause   error
	decided *harness.Outcome
	wrapped error
}

func (u *unrecorded) Error() string { return u.wrapped.Error() }
func (u *unrecorded) Unwrap() error { return u.wrapped }

// decide maps in, records it and decides on it within the event's
// deadline. Its errors wrap harness.ErrBadInput (the input), or are an
// *unrecorded wrapping ErrUnrecorded.
func (b *Bridge) decide(ctx context.Context, in harness.Input) (*harness.Outcome, error) {
	m, err := in.Map()
	if err != nil {
		return nil, err
	}
	if err := events.ValidateID("session", in.Session()); err != nil {
		return nil, fmt.Errorf("%w: session_id: %w", harness.ErrBadInput, err)
	}
	if m == nil {
		m = &harness.Mapped{Stage: events.StageHarnessEvent, Subject: in.Event(),
			Payload: events.HarnessEvent{Harness: b.cfg.Harness.Name(), Event: in.Event(), Input: in.Raw()}}
	}
	ctx, cancel := context.WithTimeout(ctx, harness.Within(in.Limit(), b.cfg.Timeout))
	defer cancel()
	type result struct {
		out *harness.Outcome
		err error
	}
	var decided atomic.Pointer[harness.Outcome]
	done := make(chan result, 1)
	go func() {
		var out *harness.Outcome
		var err error
		if m.Stage == events.StageApprovalRequested {
			out, err = b.permission(ctx, in, m, &decided)
		} else {
			out, err = b.handle(ctx, in, m, &decided)
		}
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
	if errors.Is(r.err, harness.ErrBadInput) {
		return nil, r.err
	}
	b.cfg.Logger.Warn("bridge: event not recorded", "harness", b.cfg.Harness.Name(), "event", in.Event(), "session", in.Session(), "err", r.err)
	return nil, &unrecorded{cause: r.err, decided: decided.Load(),
		wrapped: fmt.Errorf("%w: %s of session %s: %w", ErrUnrecorded, in.Event(), in.Session(), r.err)}
}

// handle does decide's work for an event other than a permission request;
// decided is set once the interceptors have decided.
func (b *Bridge) handle(ctx context.Context, in harness.Input, m *harness.Mapped, decided *atomic.Pointer[harness.Outcome]) (*harness.Outcome, error) {
	st := b.cfg.Cache.get(b.cfg.Agent, in.Session(), m.Stage == events.StageIntake)
	if st == nil {
		var err error
		if st, err = b.read(ctx, in.Session(), m.Stage == events.StageIntake); err != nil {
			return nil, err
		}
	}
	if err := b.identify(ctx, in.Session(), st, m); err != nil {
		return nil, err
	}
	p, err := b.newPlan(in, m)
	if err != nil {
		return nil, err
	}
	out := &harness.Outcome{}
	if b.cfg.Hooks != nil && m.Stage.Interceptable() {
		if n := b.cfg.Hooks.MatchesCall(m.Stage, m.Subject, m.Kind(), b.cfg.Agent); n > 0 {
			// The interceptors see the event as it will be stored if
			// nobody else appends first: its run, and its seq once every
			// matching one has answered (as the loop does).
			p.assign(st)
			p.main.Seq += uint64(n)
			if out.Chain, err = b.cfg.Hooks.Run(ctx, p.main); err != nil {
				return nil, fmt.Errorf("hooks on %s: %w", m.Stage, err)
			}
			if err := p.decided(out.Chain, b.cfg.Source); err != nil {
				return nil, err
			}
			if m.Stage == events.StageToolBefore && len(out.Chain.Data) > 0 {
				p.main.Data = renormalize(p.main.Data, events.Harness(b.cfg.Harness.Name()))
			}
		}
	}
	decided.Store(out)
	if err := b.append(ctx, p, st); err != nil {
		return nil, err
	}
	return out, nil
}

// append appends the plan's events, each fenced on the one before it,
// reading the session again and assigning runs and seqs anew when another
// writer appended first. The Cache, when there is one, remembers the
// session as the appends left it, or forgets it when they failed.
func (b *Bridge) append(ctx context.Context, p *plan, st *state) error {
	agent, session := b.cfg.Agent, p.main.SessionID
	for attempt := 1; ; attempt++ {
		seen := st.last
		lost := false
		for _, e := range p.assign(st) {
			seq, err := b.cfg.Store.AppendAfter(ctx, e, seen)
			if err != nil {
				b.cfg.Cache.forget(agent, session)
				if !isFenced(err) {
					return fmt.Errorf("append %s: %w", e.Stage, err)
				}
				lost = true
				break
			}
			st.add(e, seq)
			p.stored[e.ID], p.storedAt[e.ID] = e.RunID, seq
			seen = seq
		}
		if !lost {
			b.cfg.Cache.put(agent, session, st)
			return nil
		}
		if attempt == MaxAttempts {
			return fmt.Errorf("session %s: another writer appended first %d times", p.main.SessionID, attempt)
		}
		var err error
		if st, err = b.reread(ctx, p); err != nil {
			return err
		}
	}
}

// isFenced reports whether err is an append refused because the session
// changed since it was read.
func isFenced(err error) bool { return errors.Is(err, bus.ErrFenced) }

// renormalize normalizes a tool.before's call again once the hooks
// rewrote it, so that the action recorded describes the call as it runs.
// An MCP call keeps its action (its server and tool do not depend on the
// arguments); data that does not decode is returned as it is.
func renormalize(data json.RawMessage, h events.Harness) json.RawMessage {
	var tb events.ToolBefore
	if json.Unmarshal(data, &tb) != nil || tb.Call.Action == nil || tb.Call.Action.Kind == events.KindMCP {
		return data
	}
	tb.Call = tb.Call.WithAction(h)
	out, err := json.Marshal(tb)
	if err != nil {
		return data
	}
	return out
}
