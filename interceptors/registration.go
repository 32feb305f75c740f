package interceptors

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookbus/hookbus/events"
)

// Timeouts of a registration.
const (
	// DefaultTimeout applies when a registration sets none.
	DefaultTimeout = 5 * time.Second
	// MaxTimeout is the longest timeout a registration may ask for. A longer
	// one is a registration error rather than silently cut to the cap: the
	// plugin's author learns at once that the loop will not wait that long,
	// instead of meeting timeouts in production that the registration seemed
	// to rule out.
	MaxTimeout = 30 * time.Second
)

// Policy says what a failure of the interceptor (timeout, error, panic, no
// responders, bad reply) does to the event.
type Policy string

// The failure policies.
const (
	// PolicyIgnore (the default) fails open: the failure is recorded and the
	// chain goes on as if the interceptor had allowed.
	PolicyIgnore Policy = "ignore"
	// PolicyFail fails closed: the event is denied, with a reason naming the
	// plugin and the failure.
	PolicyFail Policy = "fail"
)

// Mode says what an interceptor may answer.
type Mode string

// The modes.
const (
	// ModeMutate (the default) interceptors run one after another, in order,
	// and may answer anything the stage accepts.
	ModeMutate Mode = "mutate"
	// ModeValidate interceptors answer allow or deny only; they run in
	// parallel after the mutating ones, on the payload as those left it.
	ModeValidate Mode = "validate"
)

// Registration is what the chain needs to call one interceptor on one stage.
// It is a plain value, stored as JSON in the bus' KV registry:
//
//	{"plugin":"pii","stage":"tool.after","order":10,"timeout":"2s","policy":"fail",
//	 "mode":"mutate","tools":"fetch_*","agents":"support-*"}
//
// Zero fields take their defaults: timeout 5s, policy ignore, mode mutate,
// any tool, any agent.
type Registration struct {
	// Plugin names the interceptor; it is a subject token (events.ValidateID)
	// and unique per stage within a chain.
	Plugin string `json:"plugin"`
	// Stage is where it intercepts; it must be Interceptable.
	Stage events.Stage `json:"stage"`
	// Order runs lower numbers first; equal orders run in registration
	// order.
	Order int `json:"order,omitempty"`
	// Timeout bounds each call (default DefaultTimeout, at most MaxTimeout
	// unless Uncapped). Its JSON form is a Go duration string ("1.5s").
	Timeout time.Duration `json:"-"`
	// Policy is the failure policy (default PolicyIgnore).
	Policy Policy `json:"policy,omitempty"`
	// Mode is ModeMutate (default), ModeValidate or ModeShadow. A
	// validating interceptor needs a stage that accepts deny; a shadow one
	// is called after the chain and its decision never applied.
	Mode Mode `json:"mode,omitempty"`
	// Tools narrows a tool.before or tool.after registration to tool names
	// matching a glob (path.Match syntax); alternatives are separated by |
	// ("fs_*|bash"). A value starting with "re:" is a Go regular expression
	// that matches anywhere in the name, as Claude Code's matchers do
	// ("re:^mcp__github__"). On subagent.before it matches the called
	// agent's id (the event's subject). Empty matches every tool.
	Tools string `json:"tools,omitempty"`
	// Kinds narrows a tool.before or tool.after registration to calls whose
	// normalized action (events.Action) is of one of the kinds listed,
	// separated by | ("shell|file.write"), or matching a glob ("file.*"),
	// whatever the harness calls the tool. A call with no action matches
	// no Kinds. With Tools too, a call must match both. Empty matches every
	// kind.
	Kinds string `json:"kinds,omitempty"`
	// Agents narrows the registration to agent ids matching a glob or a
	// "re:" regular expression, as Tools. Empty matches every agent.
	Agents string `json:"agents,omitempty"`
	// Builtin marks an interceptor shipped with hookbus; built-ins may use
	// privileged stages without a grant. Only code that registers in-process
	// interceptors may set it: a transport must clear it on registrations it
	// reads from the network.
	Builtin bool `json:"builtin,omitempty"`
	// Remote marks an interceptor called over the network (set by the
	// transport); it is recorded in hook.decided.
	Remote bool `json:"remote,omitempty"`
	// Uncapped lifts the MaxTimeout cap: the timeout may be as long as the
	// interceptor needs (a Claude Code command hook's is 600s unless its
	// settings say otherwise). Like Builtin it is for code that registers
	// in-process interceptors; it has no JSON form, so no registration read
	// from the bus' KV registry carries it.
	Uncapped bool `json:"-"`
}

// registrationJSON is Registration with the timeout as a duration string.
type registrationJSON struct {
	registrationFields
	Timeout string `json:"timeout,omitempty"`
}

type registrationFields Registration // drops the methods, keeps the tags

// MarshalJSON writes the timeout as a Go duration string.
func (r Registration) MarshalJSON() ([]byte, error) {
	j := registrationJSON{registrationFields: registrationFields(r)}
	if r.Timeout != 0 {
		j.Timeout = r.Timeout.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the timeout as a Go duration string ("5s", "250ms").
func (r *Registration) UnmarshalJSON(b []byte) error {
	var j registrationJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Registration(j.registrationFields)
	if j.Timeout != "" {
		d, err := time.ParseDuration(j.Timeout)
		if err != nil {
			return fmt.Errorf("%w: plugin %q: timeout %q is not a Go duration (\"5s\", \"250ms\")", ErrInvalidRegistration, r.Plugin, j.Timeout)
		}
		r.Timeout = d
	}
	return nil
}

// Validate checks every field and returns an error wrapping
// ErrInvalidRegistration (or events.ErrInvalidID for the plugin id) that
// names the field. It does not check trust: Chain.Register does.
func (r Registration) Validate() error {
	if err := events.ValidateID("plugin", r.Plugin); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRegistration, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: plugin %s on %s: %s", ErrInvalidRegistration, r.Plugin, r.Stage, fmt.Sprintf(format, args...))
	}
	if !r.Stage.Valid() {
		return bad("stage %q is not a hookbus stage", string(r.Stage))
	}
	if !r.Stage.Interceptable() {
		return bad("stage is observe-only (observe it with a consumer instead)")
	}
	switch {
	case r.Timeout < 0:
		return bad("timeout %s is negative", r.Timeout)
	case r.Timeout > MaxTimeout && !r.Uncapped:
		return bad("timeout %s exceeds the %s cap", r.Timeout, MaxTimeout)
	}
	switch r.Policy {
	case "", PolicyIgnore, PolicyFail:
	default:
		return bad("policy %q (want %q or %q)", string(r.Policy), PolicyIgnore, PolicyFail)
	}
	switch r.Mode {
	case "", ModeMutate:
	case ModeValidate:
		if !r.Stage.Accepts().Has(events.DecisionDeny) {
			return bad("mode validate needs a stage that accepts deny (%s accepts %s)", r.Stage, r.Stage.Accepts())
		}
	case ModeShadow:
	default:
		return bad("mode %q (want %q, %q or %q)", string(r.Mode), ModeMutate, ModeValidate, ModeShadow)
	}
	if r.Tools != "" && !ToolMatched(r.Stage) {
		return bad("tools matcher %q applies only on tool.before, tool.after and subagent.before", r.Tools)
	}
	if _, err := compileMatcher(r.Tools); err != nil {
		return bad("tools: %v", err)
	}
	if r.Kinds != "" && r.Stage != events.StageToolBefore && r.Stage != events.StageToolAfter {
		return bad("kinds matcher %q applies only on tool.before and tool.after", r.Kinds)
	}
	if _, err := compileKinds(r.Kinds); err != nil {
		return bad("kinds: %v", err)
	}
	if _, err := compileMatcher(r.Agents); err != nil {
		return bad("agents: %v", err)
	}
	return nil
}

// WithDefaults returns r with zero fields set to their defaults (timeout,
// policy, mode).
func (r Registration) WithDefaults() Registration {
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
	}
	if r.Policy == "" {
		r.Policy = PolicyIgnore
	}
	if r.Mode == "" {
		r.Mode = ModeMutate
	}
	return r
}

// ToolMatched reports whether a registration on stage may narrow itself
// with a Tools matcher: tool.before and tool.after (the tool's name) and
// subagent.before (the called agent's id), the stages whose events carry
// that name as their subject.
func ToolMatched(stage events.Stage) bool {
	return stage == events.StageToolBefore || stage == events.StageToolAfter || stage == events.StageSubagentBefore
}

// Matches reports whether the registration applies to a call of tool by
// agent: both matchers match (an empty one matches anything) and it has no
// Kinds. A malformed matcher matches nothing; Validate reports it. It
// compiles a regular expression on each call; a Chain compiles them once,
// at Register.
func (r Registration) Matches(tool, agent string) bool {
	return r.MatchesCall(tool, "", agent)
}

// MatchesCall reports whether the registration applies to a call of tool,
// whose action is of kind (empty: the call has no action), by agent: the
// Tools, Kinds and Agents matchers all match.
func (r Registration) MatchesCall(tool string, kind events.ActionKind, agent string) bool {
	t, err := compileMatcher(r.Tools)
	if err != nil {
		return false
	}
	k, err := compileKinds(r.Kinds)
	if err != nil {
		return false
	}
	a, err := compileMatcher(r.Agents)
	if err != nil {
		return false
	}
	return t.match(tool) && k.matchKind(kind) && a.match(agent)
}
