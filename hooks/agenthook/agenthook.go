package agenthook

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/prompt"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds one agent hook call (Claude Code's default).
	DefaultTimeout = 60 * time.Second
	// DefaultMaxTurns bounds the sub-agent's steps (Claude Code's).
	DefaultMaxTurns = 50
	// DefaultSource is the CloudEvent source of the sub-agent's events.
	DefaultSource = "hookbus/agenthook"
	// DefaultAgentID is the sub-agent's agent id when neither the config nor
	// the registration names one.
	DefaultAgentID = "agent-hook"
	// DefaultSystem is the sub-agent's system prompt.
	DefaultSystem = "You are a hook of an AI agent's loop: you verify whether one event of the agent's run may go on. " +
		"The user message holds your instructions and the event as JSON. Use your tools to check what you need to " +
		"(they only read). Then answer with one JSON object and nothing else: " +
		`{"ok": true} when the condition of your instructions is met, or {"ok": false, "reason": "..."} when it is not, ` +
		"the reason saying why, in words the agent can act on."
)

// Annotations an agent hook puts on its decisions besides prompt's
// (recorded in hook.decided): the sub-agent's run, so an auditor finds how
// it decided.
const (
	AnnotationRun     = "run"
	AnnotationSession = "session"
	AnnotationAgent   = "agent"
)

// Metadata keys of the sub-agent's run request (its intake): the hook and
// the event it decides.
const (
	MetaPlugin  = "hook_plugin"
	MetaStage   = "hook_stage"
	MetaEventID = "hook_event_id"
)

// Config configures an agent hook.
type Config struct {
	// Prompt is the sub-agent's task (required): $ARGUMENTS is replaced by
	// the event's JSON (prompt.Input); without it the JSON is appended.
	Prompt string
	// Model runs the sub-agent (required).
	Model loop.Model
	// ModelName annotates decisions when the model's replies name no model.
	ModelName string
	// Emitter and History record the sub-agent's run (required): give the
	// loop's (a *bus.Bus), so that the child run is in the same stream as
	// the run it decides on.
	Emitter loop.Emitter
	History loop.History
	// Tools names the tools the sub-agent may use (default DefaultTools);
	// only ReadOnlyTools are accepted. Root is the directory the file
	// tools read (required by them): the agent's root.
	Tools []string
	Root  string
	// AgentID is the sub-agent's agent id (default: the registration's
	// plugin, else DefaultAgentID).
	AgentID string
	// System is the sub-agent's system prompt (default DefaultSystem).
	System string
	// MaxTurns bounds the sub-agent's steps (default DefaultMaxTurns).
	MaxTurns int
	// Timeout bounds a call, the sub-agent's whole run (default
	// DefaultTimeout). The registration's timeout bounds it too: the
	// shorter wins.
	Timeout time.Duration
	// Input renders the event as the JSON of $ARGUMENTS (default
	// prompt.EventInput).
	Input func(*events.Event) (json.RawMessage, error)
	// Source is the CloudEvent source of the sub-agent's events (default
	// DefaultSource).
	Source string
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Hook is an agent hook: an interceptors.Interceptor that runs a sub-agent
// with read-only tools to decide whether an event may go on. Its run is a
// child run of the run being decided. It is safe for concurrent use.
type Hook struct {
	cfg Config
	eng *loop.Engine
}

// New returns an agent hook. It does no I/O. It returns an error wrapping
// ErrInvalidConfig for a missing prompt, model, emitter or history, a
// negative bound, or a tool it cannot build, and ErrWriteTool too for a
// tool that is not read-only.
func New(cfg Config) (*Hook, error) {
	switch {
	case cfg.Prompt == "":
		return nil, fmt.Errorf("%w: no prompt", ErrInvalidConfig)
	case cfg.Model == nil:
		return nil, fmt.Errorf("%w: no model", ErrInvalidConfig)
	case cfg.Emitter == nil || cfg.History == nil:
		return nil, fmt.Errorf("%w: no emitter or history to record the sub-agent's run", ErrInvalidConfig)
	case cfg.Timeout < 0 || cfg.MaxTurns < 0:
		return nil, fmt.Errorf("%w: a negative timeout or max turns", ErrInvalidConfig)
	case cfg.AgentID != "":
		if err := events.ValidateID("agent", cfg.AgentID); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	if cfg.Tools == nil {
		cfg.Tools = DefaultTools
	}
	ts, err := readOnly(cfg.Tools, cfg.Root)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.MaxTurns = cmp.Or(cfg.MaxTurns, DefaultMaxTurns)
	cfg.System = cmp.Or(cfg.System, DefaultSystem)
	if cfg.Input == nil {
		cfg.Input = prompt.EventInput
	}
	cfg.Source = cmp.Or(cfg.Source, DefaultSource)
	eng, err := loop.New(loop.Config{
		Emitter: cfg.Emitter, History: cfg.History, Model: safeModel{cfg.Model}, Tools: ts,
		Source: cfg.Source, SystemPrompt: cfg.System, MaxSteps: cfg.MaxTurns, ModelTimeout: cfg.Timeout,
		Logger: cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Hook{cfg: cfg, eng: eng}, nil
}

// Timeout is the hook's own timeout: give its registration at least as
// much (a registration on the bus is capped at interceptors.MaxTimeout),
// or the chain times the call out first.
func (h *Hook) Timeout() time.Duration { return h.cfg.Timeout }

// Intercept runs the sub-agent on req.Event, as a child run of the event's
// run (its own session; the lineage in its events), and returns its final
// answer's verdict as a decision (prompt.Verdict.Decision), annotated with
// the child's run, session and agent. A run that does not end done
// (max turns, a model failure), ends without a verdict, or does not end
// within the timeout is an error (the timeout's wraps
// interceptors.ErrTimeout; no verdict, interceptors.ErrBadReply), so that
// the registration's failure policy applies. The child run ends even then
// (the engine records an interrupted run's end past its ctx), and
// Intercept returns only once it has.
func (h *Hook) Intercept(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	ev := req.Event
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	input, err := h.cfg.Input(ev)
	if err != nil {
		return nil, err
	}
	agent := cmp.Or(h.cfg.AgentID, req.Registration.Plugin, DefaultAgentID)
	child := events.NewID()
	depth := 1
	if ev.ParentRunID != "" {
		depth = 2 // the event's run is a child itself; events carry no deeper depth
	}
	res, err := h.eng.Run(ctx, &events.RunRequest{
		RunID: child, AgentID: agent, SessionID: child, Prompt: prompt.Render(h.cfg.Prompt, input),
		Metadata:      map[string]string{MetaPlugin: req.Registration.Plugin, MetaStage: string(req.Stage), MetaEventID: ev.ID},
		ParentAgentID: ev.AgentID, ParentSessionID: ev.SessionID, ParentRunID: ev.RunID, Depth: depth,
	})
	switch {
	case err == nil && res.Reason == events.ReasonDone:
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		dl, _ := ctx.Deadline()
		return nil, fmt.Errorf("%w: agent hook: run %s/%s gave no verdict within %s: %w", interceptors.ErrTimeout, agent, child, dl.Sub(start).Round(time.Millisecond), ctx.Err())
	case err != nil:
		return nil, fmt.Errorf("agent hook: run %s/%s: %w", agent, child, err)
	default:
		return nil, fmt.Errorf("agent hook: run %s/%s ended %s without a verdict: %s", agent, child, res.Reason, res.Detail)
	}
	v, err := prompt.ParseVerdict(res.Answer)
	if err != nil {
		return nil, fmt.Errorf("%w: agent hook: run %s/%s: %w", interceptors.ErrBadReply, agent, child, err)
	}
	d, err := v.Decision(req.Stage)
	if err != nil {
		return nil, err
	}
	d.Annotations = map[string]string{AnnotationRun: child, AnnotationSession: child, AnnotationAgent: agent}
	if h.cfg.ModelName != "" {
		d.Annotations[prompt.AnnotationModel] = h.cfg.ModelName
	}
	return d, nil
}

// safeModel turns a panic of the model into an error, so that the
// sub-agent's run ends (run.failed) instead of being left open.
type safeModel struct{ m loop.Model }

func (s safeModel) Generate(ctx context.Context, req *loop.ModelRequest) (resp *loop.ModelResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("model panicked: %v", p)
		}
	}()
	return s.m.Generate(ctx, req)
}
