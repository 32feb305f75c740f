package loop

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/hookbus/hookbus/events"
)

// Defaults of Config.
const (
	DefaultSource       = "hookbus/loop"
	DefaultMaxSteps     = 10
	DefaultMaxContinues = 3
)

// Config configures an Engine.
type Config struct {
	// Emitter publishes the events (required).
	Emitter Emitter
	// History rebuilds sessions; nil means every run starts a new
	// conversation and runs cannot resume.
	History History
	// Model answers each step (required).
	Model Model
	// Tools the model may call.
	Tools []Tool
	// Hooks is the interceptor chain; nil means no interception.
	Hooks Interception
	// Source is the CloudEvent source of the events (default DefaultSource).
	Source string
	// SystemPrompt, when set, is the first message of every model call.
	SystemPrompt string
	// MaxSteps bounds a run (default DefaultMaxSteps); a request may lower
	// or raise it with RunRequest.MaxSteps.
	MaxSteps int
	// MaxContinues bounds how many times stop hooks may force a run on
	// (default DefaultMaxContinues).
	MaxContinues int
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Engine runs agents. It is safe for concurrent runs.
type Engine struct {
	cfg   Config
	tools map[string]Tool
	specs []events.ToolSpec
}

// New returns an engine. It returns an error wrapping ErrInvalidConfig when
// the Emitter or Model is missing, a tool has no name, or two tools share one.
func New(cfg Config) (*Engine, error) {
	if cfg.Emitter == nil {
		return nil, fmt.Errorf("%w: no Emitter", ErrInvalidConfig)
	}
	if cfg.Model == nil {
		return nil, fmt.Errorf("%w: no Model", ErrInvalidConfig)
	}
	if cfg.Source == "" {
		cfg.Source = DefaultSource
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.MaxContinues <= 0 {
		cfg.MaxContinues = DefaultMaxContinues
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e := &Engine{cfg: cfg, tools: make(map[string]Tool, len(cfg.Tools))}
	for _, t := range cfg.Tools {
		spec := t.Spec()
		if spec.Name == "" {
			return nil, fmt.Errorf("%w: a tool has no name", ErrInvalidConfig)
		}
		if _, dup := e.tools[spec.Name]; dup {
			return nil, fmt.Errorf("%w: two tools named %q", ErrInvalidConfig, spec.Name)
		}
		e.tools[spec.Name] = t
		e.specs = append(e.specs, spec)
	}
	return e, nil
}

// Result is how a run ended.
type Result struct {
	RunID     string
	AgentID   string
	SessionID string
	// Reason is one of the events.Reason* values, or "failed".
	Reason string
	// Detail says why, for reasons other than done.
	Detail string
	Answer string
	Steps  int
	Usage  events.Usage
	// Events is how many events the run published, the terminal one included.
	Events int
	// Resumed is true when the run continued an interrupted attempt.
	Resumed bool
	// Ended is true when the run's end (run.completed or run.failed) is in
	// the stream: the request is done with, even if Run returned an error.
	Ended bool
}

// ReasonFailed is Result.Reason for a run that ended with run.failed.
const ReasonFailed = "failed"

// Run runs one request to its end and returns how it ended. The request's
// ids are validated first (an error wrapping ErrInvalidRequest, and nothing
// published); an empty RunID gets a new ULID. If the run id already has
// events, the run resumes from them, and if it already ended, its recorded
// result is returned without running anything.
//
// A run that ends with run.completed returns a nil error, whatever the
// reason (done, denied, stopped, ...). A model failure or a failure to
// publish ends the run with run.failed and returns the error.
func (e *Engine) Run(ctx context.Context, req *events.RunRequest, opts ...RunOption) (*Result, error) {
	rq := *req
	if rq.RunID == "" {
		rq.RunID = events.NewID()
	}
	if rq.SubmittedAt.IsZero() {
		rq.SubmittedAt = nowUTC()
	}
	if err := rq.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	r := &run{eng: e, req: &rq, maxSteps: e.cfg.MaxSteps, hooks: e.cfg.Hooks}
	for _, o := range opts {
		o(r)
	}
	if rq.MaxSteps > 0 {
		r.maxSteps = rq.MaxSteps
	}
	return r.execute(ctx)
}
