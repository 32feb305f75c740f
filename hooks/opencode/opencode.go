package opencode

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// DefaultHookLimit is how long the plugin waits for the gateway by default
// (HOOKBUS_TIMEOUT_MS).
const DefaultHookLimit = 30 * time.Second

// table is the one list of the events the plugin posts, as Claude Code's
// events, and the stage each is recorded as, in the order a session meets
// them. It is never written.
var table = harness.Table{
	{Name: "SessionStart", Stage: events.StageRunStarted},
	{Name: "UserPromptSubmit", Stage: events.StageIntake},
	{Name: "PreToolUse", Stage: events.StageToolBefore},
	{Name: "PostToolUse", Stage: events.StageToolAfter},
	{Name: "Stop", Stage: events.StageStop},
	{Name: "StopFailure", Stage: events.StageRunFailed},
	{Name: "SessionEnd", Stage: events.StageRunCompleted},
}

// Hooks maps the plugin's hooks (and the session events of its event
// hook) to the events it posts them as, in table order.
var hooks = [][2]string{
	{"event session.created", "SessionStart"},
	{"chat.message", "UserPromptSubmit"},
	{"tool.execute.before", "PreToolUse"},
	{"tool.execute.after", "PostToolUse"},
	{"event session.idle", "Stop"},
	{"event session.error", "StopFailure"},
	{"event session.deleted", "SessionEnd"},
}

// Events returns the events the plugin posts, in the order a session
// meets them.
func Events() []string { return table.Names() }

// Hooks returns the plugin hooks (OpenCode's names) the plugin posts, in
// the order of Events.
func Hooks() []string {
	out := make([]string, len(hooks))
	for i := range hooks {
		out[i] = hooks[i][0]
	}
	return out
}

// StageOf returns the stage an event the plugin posts is recorded as; ""
// for one it does not post.
func StageOf(event string) events.Stage { return table.StageOf(event) }

// Harness is OpenCode or Kilo Code as a harness of the bridge
// (harness.Protocol): OpenCode and Kilo.
type Harness struct {
	name, agent, title string
	action             events.Harness
}

// The two CLIs the plugin runs in.
var (
	// OpenCode is opencode-ai: --harness opencode, agent id opencode,
	// route /opencode.
	OpenCode = Harness{name: "opencode", agent: "opencode", title: "OpenCode", action: events.HarnessOpenCode}
	// Kilo is Kilo Code's CLI (@kilocode/cli): --harness kilo, agent id
	// kilo-code, route /kilo-code.
	Kilo = Harness{name: "kilo", agent: "kilo-code", title: "Kilo Code", action: events.HarnessKilo}
)

// Name is the harness's name on the command line: opencode or kilo.
func (h Harness) Name() string { return h.name }

// Agent is the agent id its sessions are recorded under by default:
// opencode or kilo-code.
func (h Harness) Agent() string { return h.agent }

// Parse reads one hook input the plugin posted: Claude Code's input
// (claudecode.ParseInput) of an event in Events. The error wraps
// harness.ErrBadInput.
func (h Harness) Parse(raw []byte) (harness.Input, error) {
	in, err := claudecode.ParseInput(raw)
	if err != nil {
		return nil, err
	}
	if StageOf(string(in.HookEventName)) == "" {
		return nil, fmt.Errorf("%w: the %s plugin posts no %q event (it posts %s)", harness.ErrBadInput, h.title, in.HookEventName, strings.Join(Events(), ", "))
	}
	if in.SessionID == "" {
		return nil, fmt.Errorf("%w: %s: no session_id", harness.ErrBadInput, in.HookEventName)
	}
	return &Input{Input: in, h: h}, nil
}

// Input is one hook input of the plugin.
// Its event (hook_event_name) is the Claude Code event the plugin's hook
// stands for, its session (session_id) OpenCode's session id (ses_...).
type Input struct {
	*claudecode.Input
	h Harness
}

// Limit is the plugin's default wait for the gateway.
func (c *Input) Limit() time.Duration { return DefaultHookLimit }

// Map returns the stage event the input is recorded as (Claude Code's
// mapping), its tool call's action from OpenCode's tool table.
func (c *Input) Map() (*harness.Mapped, error) {
	m, err := c.Input.ToHookbus()
	if err != nil {
		return nil, err
	}
	m.Normalize(c.h.action)
	claudecode.Rename(m, c.h.title)
	return m, nil
}

// Answer is the plugin's answer to one hook: what it does with it.
type Answer struct {
	// Block is the reason the plugin throws: the tool call is not run (the
	// model is told the reason), the prompt is not sent.
	Block string `json:"block,omitempty"`
	// Args are the tool call's arguments as rewritten: the plugin runs
	// the call with them.
	Args json.RawMessage `json:"args,omitempty"`
	// Context is text the plugin adds to a tool's output for the model.
	Context string `json:"context,omitempty"`
	// Warnings are for the person, one line each (the plugin logs them).
	Warnings []string `json:"warnings,omitempty"`
}

// Answer words the outcome as the plugin's Answer.
func (c *Input) Answer(out *harness.Outcome) (*harness.Reply, error) {
	o, err := claudecode.AnswerOutcome(c.Input, out, claudecode.AnswerOptions{ApproveModified: true})
	if err != nil {
		return nil, err
	}
	return c.reply(o), nil
}

// Outage is Claude Code's outage answer as the plugin's: under
// PolicyFail a tool call or a prompt is blocked.
func (c *Input) Outage(policy interceptors.Policy, cause error) *harness.Reply {
	return c.reply(claudecode.OutageAnswer(c.Input, policy, cause))
}

// reply reads Claude Code's output o as the plugin's Answer; an answer of
// nothing is an empty body.
func (c *Input) reply(o *claudecode.Output) *harness.Reply {
	var a Answer
	if o.SystemMessage != "" {
		a.Warnings = strings.Split(o.SystemMessage, "\n")
	}
	hs := o.HookSpecificOutput
	if hs == nil {
		hs = &claudecode.SpecificOutput{}
	}
	stopped := o.Continue != nil && !*o.Continue
	switch c.Input.HookEventName {
	case claudecode.PreToolUse:
		switch {
		case stopped:
			a.Block = nonEmpty(o.StopReason, "hookbus stopped the run")
		case hs.PermissionDecision == claudecode.PermissionDeny:
			a.Block = nonEmpty(hs.PermissionDecisionReason, "denied by a hookbus interceptor")
		case hs.PermissionDecision == claudecode.PermissionAsk:
			a.Block = "a person must approve this call, which the " + c.h.title + " plugin cannot ask for: " + hs.PermissionDecisionReason
		case len(hs.UpdatedInput) > 0:
			a.Args = hs.UpdatedInput
		}
	case claudecode.UserPromptSubmit:
		switch {
		case stopped:
			a.Block = nonEmpty(o.StopReason, "hookbus stopped the run")
		case o.Decision == "block":
			a.Block = nonEmpty(o.Reason, "blocked by a hookbus interceptor")
		}
	case claudecode.PostToolUse:
		var notes []string
		if o.Decision == "block" && o.Reason != "" {
			notes = append(notes, o.Reason)
		}
		if hs.AdditionalContext != "" {
			notes = append(notes, hs.AdditionalContext)
		}
		a.Context = strings.Join(notes, "\n")
	}
	if a.Block == "" && len(a.Args) == 0 && a.Context == "" && len(a.Warnings) == 0 {
		return &harness.Reply{}
	}
	b, _ := json.Marshal(a)
	return &harness.Reply{Stdout: b}
}

func nonEmpty(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
