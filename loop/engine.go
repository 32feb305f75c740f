package loop

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookbus/hookbus/events"
)

// Defaults of Config.
const (
	DefaultSource       = "hookbus/loop"
	DefaultMaxSteps     = 10
	DefaultMaxContinues = 3
	// DefaultModelTimeout bounds one model call.
	DefaultModelTimeout = 5 * time.Minute
	// DefaultModelAttempts bounds the attempts of one model call.
	DefaultModelAttempts = 4
	// DefaultToolTimeout bounds one tool call: longer than the Bash tool's
	// longest command (10 minutes) and the time it takes to kill it.
	DefaultToolTimeout = 15 * time.Minute
	// DefaultToolGrace is how long a tool whose call's ctx ended has to
	// return before it is abandoned: longer than the Bash tool's kill grace.
	DefaultToolGrace = 5 * time.Second
)

// Config configures an Engine.
type Config struct {
	// Emitter appends the events (required).
	Emitter Emitter
	// History reads sessions back (required): a session's next run
	// continues its conversation, and an interrupted run resumes from its
	// events.
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
	// ModelTimeout bounds one model call (default DefaultModelTimeout): a
	// call that takes longer fails as a timeout, which is retried.
	ModelTimeout time.Duration
	// ModelRetry is how failed model calls are retried.
	ModelRetry Retry
	// ToolTimeout bounds one tool call (default DefaultToolTimeout): when
	// it passes, the call's ctx ends and the call fails with an error
	// wrapping ErrToolTimeout, which the model is told; the run goes on.
	// ToolGrace (default DefaultToolGrace) is how long a tool whose ctx
	// ended (the timeout, or the run's own ctx) has to return: one that
	// does not, stuck in a system call that ignores its ctx, is abandoned
	// and logged, and its goroutine lingers until the call returns.
	ToolTimeout, ToolGrace time.Duration
	// Budget bounds what one run may use; the zero value bounds nothing.
	// A request's own budget (RunRequest.Budget) overrides it field by
	// field.
	Budget events.Budget
	// Prices is what the model costs, for Budget.MaxCostUSD and the cost
	// in Usage; nil counts no cost.
	Prices *events.Prices
	// SharedBudget, when set, is the fleet's budget every step's model
	// call is reserved against and charged to (*budgets.Budgets); a run with
	// no room left ends with reason cost_limit naming the budget.
	SharedBudget SharedBudget
	// Subagents are the agents this agent may call (the Task tool); Team
	// finds their engines (required with Subagents). MaxDepth bounds how
	// deep sub-agents nest (default DefaultMaxDepth).
	Subagents []Subagent
	Team      *Team
	MaxDepth  int
	// Compaction says when a run's conversation is summarised; the zero
	// value never compacts.
	Compaction Compaction
	// Approval says which tool calls wait for a human besides those a hook
	// asks about, and what an unanswered request becomes.
	Approval Approval
	// Queue wakes waiting runs up at their approvals' expiry, and resumes
	// a sub-agent's caller when the sub-agent ends after waiting. nil: a
	// waiting run's approvals do not expire. *bus.Bus implements it.
	Queue Queue
	// Signer signs each run's terminal event (the head of its hash
	// chain); nil: runs end unsigned. See events.ChainHash.
	Signer Signer
	// Definition names the agent definition the engine runs (its digest,
	// name and version): every run.started records it, and a run recorded
	// on another definition is not run (ErrOtherDefinition) unless
	// OnDefinitionChange is DefinitionAdopt. Zero: the engine records none
	// and runs any run.
	Definition events.Definition
	// OnDefinitionChange is DefinitionWait (the default) or
	// DefinitionAdopt: what the engine does with a run recorded on another
	// definition of its agent.
	OnDefinitionChange string
	// Worker names the process the engine runs in: every run.started
	// records it, so that a run resumed by another worker shows where each
	// attempt ran. A run queue worker gives its name in the fleet
	// (runs.ConsumerConfig.Worker); nil records none.
	Worker *events.Worker
	// KnownSessions bounds how many sessions the engine remembers having
	// seen hold events (default DefaultKnownSessions, least recently used
	// forgotten first). A new run on any other session starts without
	// reading it, its first append fenced on the session being empty (see
	// knownsessions.go and docs/PROTOCOL.md); -1 turns that off: every
	// attempt reads its session first.
	KnownSessions int
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// What an engine does with a run recorded on another definition of its
// agent (Config.OnDefinitionChange).
const (
	// DefinitionWait refuses it (ErrOtherDefinition): the run waits for a
	// worker with its definition.
	DefinitionWait = "wait"
	// DefinitionAdopt goes on with it on the engine's definition; the
	// attempt's run.started records both.
	DefinitionAdopt = "adopt"
)

// Signer signs the heads of the runs' hash chains: an ed25519 key, such as
// an nkey (nkeys.KeyPair has both methods).
type Signer interface {
	// PublicKey names the key; verifiers know it.
	PublicKey() (string, error)
	// Sign signs data.
	Sign(data []byte) ([]byte, error)
}

// Compaction is an agent's context budget: when the conversation passes
// MaxTokens (the model's reported usage, or an estimate), the loop has the
// model summarise its older part before the next model call.
type Compaction struct {
	// MaxTokens is the context budget (0: never compact).
	MaxTokens int
	// Keep is how many of the latest messages are kept verbatim (default
	// DefaultCompactKeep; moved earlier so the kept part never starts with
	// a tool result).
	Keep int
	// Instruction asks the model for the summary (default
	// DefaultCompactInstruction).
	Instruction string
	// Fail ends the run when the summary fails; by default the run goes on
	// uncompacted.
	Fail bool
}

// Defaults of Compaction.
const (
	DefaultCompactKeep        = 4
	DefaultCompactInstruction = "Summarise the conversation above for yourself: the user's goals, what was done and found, tool results that still matter, and what is left to do. The summary replaces the conversation, so keep every fact you will need."
)

// Approval is an agent's approval policy.
type Approval struct {
	// Required reports why call must wait for a human's approval (""
	// when it need not): the agent's needs_approval. Calls a tool.before
	// hook answers ask about wait too.
	Required func(call events.ToolCall) string
	// Expiry is how long a request waits for an answer (default
	// DefaultApprovalExpiry).
	Expiry time.Duration
	// OnExpiry is what an unanswered request becomes: an events.Action*
	// (default events.ActionRejectAndContinue: the call is denied and the
	// model told why).
	OnExpiry string
}

// DefaultApprovalExpiry is how long an approval request waits by default.
const DefaultApprovalExpiry = 24 * time.Hour

// Queue is the run queue as the engine uses it to wake waiting runs up.
type Queue interface {
	// WakeAt delivers w to the workers at w.At (Resumer.Due takes it).
	WakeAt(ctx context.Context, w events.Wake) error
	// Resume queues req, a run to resume, under the de-duplication id id.
	Resume(ctx context.Context, req *events.RunRequest, id string) error
}

// Retry is how failed model calls are retried: a failure the provider marks
// retryable (a *ModelError with Retryable set, or a call that timed out) is
// tried again after a back-off, doubling from Backoff up to MaxBackoff, or
// after the provider's Retry-After (capped at MaxBackoff), up to Attempts
// attempts in all and within the run's context. Every failed attempt is a
// model.failed event.
type Retry struct {
	// Attempts bounds the attempts of one call (default
	// DefaultModelAttempts; 1: no retry).
	Attempts int
	// Backoff is the first wait (default 500ms).
	Backoff time.Duration
	// MaxBackoff bounds a wait, a Retry-After included (default 30s).
	MaxBackoff time.Duration
}

// Engine runs agents. It is safe for concurrent runs.
type Engine struct {
	cfg   Config
	tools map[string]Tool
	specs []events.ToolSpec
	known *knownSessions // nil: every attempt reads its session first
}

// New returns an engine. It returns an error wrapping ErrInvalidConfig when
// the Emitter, History or Model is missing, a tool has no name, two tools
// share one, or a bound is negative.
func New(cfg Config) (*Engine, error) {
	switch {
	case cfg.Emitter == nil:
		return nil, fmt.Errorf("%w: no Emitter", ErrInvalidConfig)
	case cfg.History == nil:
		return nil, fmt.Errorf("%w: no History", ErrInvalidConfig)
	case cfg.Model == nil:
		return nil, fmt.Errorf("%w: no Model", ErrInvalidConfig)
	case cfg.MaxSteps < 0, cfg.MaxContinues < 0, cfg.ModelTimeout < 0, cfg.ToolTimeout < 0, cfg.ToolGrace < 0,
		cfg.ModelRetry.Attempts < 0, cfg.ModelRetry.Backoff < 0, cfg.ModelRetry.MaxBackoff < 0:
		return nil, fmt.Errorf("%w: a negative bound", ErrInvalidConfig)
	}
	if err := cfg.Budget.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	cfg.Source = cmp.Or(cfg.Source, DefaultSource)
	if len(cfg.Subagents) > 0 && cfg.Team == nil {
		return nil, fmt.Errorf("%w: sub-agents without a Team to find their engines", ErrInvalidConfig)
	}
	if cfg.MaxDepth < 0 {
		return nil, fmt.Errorf("%w: max depth %d is negative", ErrInvalidConfig, cfg.MaxDepth)
	}
	cfg.MaxDepth = cmp.Or(cfg.MaxDepth, DefaultMaxDepth)
	if cfg.Compaction.MaxTokens < 0 || cfg.Compaction.Keep < 0 {
		return nil, fmt.Errorf("%w: a negative compaction bound", ErrInvalidConfig)
	}
	cfg.Compaction.Keep = cmp.Or(cfg.Compaction.Keep, DefaultCompactKeep)
	cfg.Compaction.Instruction = cmp.Or(cfg.Compaction.Instruction, DefaultCompactInstruction)
	if cfg.Approval.Expiry <= 0 {
		cfg.Approval.Expiry = DefaultApprovalExpiry
	}
	cfg.Approval.OnExpiry = cmp.Or(cfg.Approval.OnExpiry, events.ActionRejectAndContinue)
	if !events.ValidAction(cfg.Approval.OnExpiry) {
		return nil, fmt.Errorf("%w: approval on_expiry %q (want approve, reject or reject_and_continue)", ErrInvalidConfig, cfg.Approval.OnExpiry)
	}
	switch cfg.OnDefinitionChange {
	case "":
		cfg.OnDefinitionChange = DefinitionWait
	case DefinitionWait, DefinitionAdopt:
	default:
		return nil, fmt.Errorf("%w: on definition change %q (want wait or adopt)", ErrInvalidConfig, cfg.OnDefinitionChange)
	}
	if d := cfg.Definition.Digest; d != "" {
		if err := events.ValidateDigest(d); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
	}
	cfg.MaxSteps = cmp.Or(cfg.MaxSteps, DefaultMaxSteps)
	cfg.MaxContinues = cmp.Or(cfg.MaxContinues, DefaultMaxContinues)
	cfg.ModelTimeout = cmp.Or(cfg.ModelTimeout, DefaultModelTimeout)
	cfg.ToolTimeout = cmp.Or(cfg.ToolTimeout, DefaultToolTimeout)
	cfg.ToolGrace = cmp.Or(cfg.ToolGrace, DefaultToolGrace)
	cfg.ModelRetry.Attempts = cmp.Or(cfg.ModelRetry.Attempts, DefaultModelAttempts)
	cfg.ModelRetry.Backoff = cmp.Or(cfg.ModelRetry.Backoff, 500*time.Millisecond)
	cfg.ModelRetry.MaxBackoff = cmp.Or(cfg.ModelRetry.MaxBackoff, 30*time.Second)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.KnownSessions < -1 {
		return nil, fmt.Errorf("%w: known sessions %d (want -1, 0 for the default, or more)", ErrInvalidConfig, cfg.KnownSessions)
	}
	cfg.KnownSessions = cmp.Or(cfg.KnownSessions, DefaultKnownSessions)
	e := &Engine{cfg: cfg, tools: make(map[string]Tool, len(cfg.Tools)), known: newKnownSessions(cfg.KnownSessions, knownSessionsBytes)}
	if err := e.indexTools(); err != nil {
		return nil, err
	}
	return e, nil
}

// indexTools names the engine's tools and their specs, with the Task tool
// when it has sub-agents. An error wraps ErrInvalidConfig: a tool with no
// name, two with one name, or a tool named as the Task tool.
func (e *Engine) indexTools() error {
	for _, t := range e.cfg.Tools {
		spec := t.Spec()
		if spec.Name == "" {
			return fmt.Errorf("%w: a tool has no name", ErrInvalidConfig)
		}
		if _, dup := e.tools[spec.Name]; dup {
			return fmt.Errorf("%w: two tools named %q", ErrInvalidConfig, spec.Name)
		}
		e.tools[spec.Name] = t
		e.specs = append(e.specs, spec)
	}
	if len(e.cfg.Subagents) > 0 {
		if _, dup := e.tools[TaskTool]; dup {
			return fmt.Errorf("%w: a tool named %q and sub-agents (the %s tool calls them)", ErrInvalidConfig, TaskTool, TaskTool)
		}
		e.specs = append(e.specs, taskSpec(e.cfg.Subagents))
	}
	return nil
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
	// Waiting lists the tool calls the run waits for a human's answer on
	// (Reason ReasonWaiting): the attempt ended without ending the run; an
	// answer resumes it.
	Waiting []events.ApprovalRequested
}

// ReasonWaiting is Result.Reason for a run that waits for approvals.
const ReasonWaiting = "waiting"

// ReasonFailed is Result.Reason for a run that ended with run.failed.
const ReasonFailed = "failed"

// Run runs one request to its end and returns how it ended. The request's
// ids are validated first (an error wrapping ErrInvalidRequest, and nothing
// published); an empty RunID gets a new ULID. If the run id already has
// events, the run resumes from them, and if it already ended, its recorded
// result is returned without running anything.
//
// A run that ends with run.completed returns a nil error, whatever the
// reason (done, denied, stopped, cost_limit, ...). A failure of the run
// itself (the model failing after its retries) ends it with run.failed and
// returns the error. A failure to record the run (NATS away longer than the
// Emitter waits) does not end it: Run returns an error wrapping
// ErrUnrecorded, and the run resumes from its events when it is run again.
// An attempt that lost its session to another attempt of the same run
// returns an error wrapping ErrLostRun.
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
	if err := checkTraceparent(&rq); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	r := &run{eng: e, builder: builder{source: e.cfg.Source, req: &rq}, maxSteps: e.cfg.MaxSteps, hooks: e.cfg.Hooks, budget: e.cfg.Budget.Override(rq.Budget)}
	for _, o := range opts {
		o(r)
	}
	if rq.MaxSteps > 0 {
		r.maxSteps = rq.MaxSteps
	}
	r.cold = e.coldStart(&rq, r.hooks)
	return r.execute(ctx)
}

func nowUTC() time.Time { return time.Now().UTC() }
