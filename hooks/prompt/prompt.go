package prompt

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds one prompt hook call (Claude Code's default).
	DefaultTimeout = 30 * time.Second
	// DefaultCacheTTL is how long a cached decision is reused.
	DefaultCacheTTL = 5 * time.Minute
	// MinCacheTTL is the shortest cache TTL: the KV bucket counts entry
	// TTLs in whole seconds.
	MinCacheTTL = time.Second
	// CacheTimeout bounds each cache read and write: a cache that does not
	// answer costs a hook this much, not its whole timeout (the decision
	// is then the model's, with a warning).
	CacheTimeout = 2 * time.Second
	// DefaultSystem is the system prompt of the model call.
	DefaultSystem = "You are a hook of an AI agent's loop: you decide whether one event of the agent's run may go on. " +
		"The user message holds your instructions and the event as JSON. Answer with one JSON object and nothing else: " +
		`{"ok": true} when the condition of your instructions is met, or {"ok": false, "reason": "..."} when it is not, ` +
		"the reason saying why, in words the agent can act on."
)

// Annotations a prompt or agent hook puts on its decisions (recorded in
// hook.decided).
const (
	// AnnotationCache is "hit" for a decision taken from the cache, "miss"
	// for one the model gave when a cache is configured.
	AnnotationCache = "cache"
	// AnnotationModel names the model that gave the decision.
	AnnotationModel = "model"
)

// Model is what a prompt hook consumes of the engine: one model call.
// Every loop.Model (the openai, anthropic and scripted providers) is one;
// the request and the reply are the engine's plain types, so one provider
// serves agents and hooks alike.
type Model interface {
	Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error)
}

// Config configures a prompt hook.
type Config struct {
	// Prompt is the template (required): $ARGUMENTS is replaced by the
	// event's JSON (Input); without it the JSON is appended.
	Prompt string
	// Model answers (required): the agent's, or a smaller one.
	Model Model
	// ModelName names Model ("anthropic:claude-haiku-4-5"): it is part of
	// the hook's id, so two hooks that differ only by their model do not
	// share cached decisions, and annotates decisions when the model's
	// reply names no model.
	ModelName string
	// System is the system prompt (default DefaultSystem).
	System string
	// Timeout bounds a call (default DefaultTimeout). The registration's
	// own timeout bounds it too: the shorter wins.
	Timeout time.Duration
	// Input renders the event as the JSON of $ARGUMENTS (default
	// EventInput). A Claude Code settings loader gives Claude Code's hook
	// input here.
	Input func(*events.Event) (json.RawMessage, error)
	// Cache, when set, keeps decisions for CacheTTL (default
	// DefaultCacheTTL, at least MinCacheTTL): the same hook on the same
	// input reuses the decision.
	Cache    Cache
	CacheTTL time.Duration
	// Now is the clock of cached decisions' expiry (default time.Now).
	Now func() time.Time
}

// Hook is a prompt hook: an interceptors.Interceptor that asks a model,
// once per event, whether the event may go on. It is safe for concurrent
// use, and may be registered on several stages.
type Hook struct {
	cfg Config
}

// New returns a prompt hook. It returns an error wrapping ErrInvalidConfig
// for a missing prompt or model, a negative timeout or a cache TTL under
// MinCacheTTL.
func New(cfg Config) (*Hook, error) {
	switch {
	case cfg.Prompt == "":
		return nil, fmt.Errorf("%w: no prompt", ErrInvalidConfig)
	case cfg.Model == nil:
		return nil, fmt.Errorf("%w: no model", ErrInvalidConfig)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: timeout %s is negative", ErrInvalidConfig, cfg.Timeout)
	case cfg.CacheTTL < 0 || cfg.CacheTTL > 0 && cfg.CacheTTL < MinCacheTTL:
		return nil, fmt.Errorf("%w: cache TTL %s (want at least %s)", ErrInvalidConfig, cfg.CacheTTL, MinCacheTTL)
	}
	cfg.System = cmp.Or(cfg.System, DefaultSystem)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	if cfg.Input == nil {
		cfg.Input = EventInput
	}
	cfg.CacheTTL = cmp.Or(cfg.CacheTTL, DefaultCacheTTL)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Hook{cfg: cfg}, nil
}

// Timeout is the hook's own timeout: give its registration at least as
// much, or the chain times the call out first.
func (h *Hook) Timeout() time.Duration { return h.cfg.Timeout }

// ID is the hook's id on stage: derived from the system prompt, the
// template, the model's name and the stage, so that the same hook on
// another worker has the same id (the first part of its cache keys).
func (h *Hook) ID(stage events.Stage) string {
	s := sha256.New()
	for _, part := range []string{"hookbus prompt hook v1", h.cfg.System, h.cfg.Prompt, h.cfg.ModelName, string(stage)} {
		s.Write([]byte(part))
		s.Write([]byte{0})
	}
	return hex.EncodeToString(s.Sum(nil)[:8])
}

// Intercept asks the model about req.Event (or reuses a cached decision)
// and returns its verdict as a decision (Verdict.Decision). A model that
// fails, does not answer within the timeout, or replies without a verdict
// is an error (timeout: wrapping interceptors.ErrTimeout; no verdict:
// ErrNoVerdict and interceptors.ErrBadReply), so that the registration's
// failure policy applies.
func (h *Hook) Intercept(ctx context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
	ev := req.Event
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	var key string
	var warnings []string
	if h.cfg.Cache != nil {
		hash, err := inputHash(ev)
		if err != nil {
			return nil, err
		}
		key = h.ID(req.Stage) + "." + hash
		cctx, ccancel := context.WithTimeout(ctx, CacheTimeout)
		value, stored, found, err := h.cfg.Cache.Get(cctx, key)
		ccancel()
		switch {
		case err != nil:
			warnings = append(warnings, "decision cache: "+err.Error())
		case found:
			if e, live := readEntry(value, stored, h.cfg.Now(), h.cfg.CacheTTL); live {
				return decided(e.Verdict, req.Stage, "hit", e.Model, nil)
			}
		}
	}
	input, err := h.cfg.Input(ev)
	if err != nil {
		return nil, err
	}
	resp, err := h.cfg.Model.Generate(ctx, &loop.ModelRequest{
		AgentID: ev.AgentID, RunID: ev.RunID, Step: 1,
		Messages: []events.Message{
			{Role: events.RoleSystem, Content: h.cfg.System},
			{Role: events.RoleUser, Content: Render(h.cfg.Prompt, input)},
		},
	})
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			dl, _ := ctx.Deadline()
			return nil, fmt.Errorf("%w: prompt hook: no answer from the model within %s: %w", interceptors.ErrTimeout, dl.Sub(start).Round(time.Millisecond), err)
		}
		return nil, fmt.Errorf("prompt hook: model: %w", err)
	}
	if resp == nil {
		return nil, fmt.Errorf("prompt hook: model: no reply")
	}
	v, err := ParseVerdict(resp.Message.Content)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", interceptors.ErrBadReply, err)
	}
	model := cmp.Or(resp.Model, h.cfg.ModelName)
	if h.cfg.Cache == nil {
		return decided(v, req.Stage, "", model, warnings)
	}
	value, _ := json.Marshal(entry{Verdict: v, ExpiresAt: h.cfg.Now().Add(h.cfg.CacheTTL), Model: model}) // cannot fail
	cctx, ccancel := context.WithTimeout(ctx, CacheTimeout)
	defer ccancel()
	if err := h.cfg.Cache.Put(cctx, key, value, h.cfg.CacheTTL); err != nil {
		warnings = append(warnings, "decision cache: "+err.Error())
	}
	return decided(v, req.Stage, "miss", model, warnings)
}

// decided is v as a decision on stage, annotated.
func decided(v Verdict, stage events.Stage, cache, model string, warnings []string) (*interceptors.Decision, error) {
	d, err := v.Decision(stage)
	if err != nil {
		return nil, err
	}
	d.Warnings = warnings
	if cache != "" || model != "" {
		d.Annotations = map[string]string{}
		if cache != "" {
			d.Annotations[AnnotationCache] = cache
		}
		if model != "" {
			d.Annotations[AnnotationModel] = model
		}
	}
	return d, nil
}
