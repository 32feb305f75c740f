package claudecode

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Output is Claude Code's JSON hook output: what a hook prints on stdout
// (exiting 0) or an http hook answers in its body.
type Output struct {
	// Continue false stops Claude Code (hookbus: stops the run, or denies
	// where the stage accepts no stop); StopReason says why.
	Continue   *bool  `json:"continue,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	// SuppressOutput hides the hook's stdout from Claude Code's transcript
	// view; hookbus shows no hook output to anyone, so it changes nothing.
	SuppressOutput bool `json:"suppressOutput,omitempty"`
	// SystemMessage is a warning for the user: recorded as a warning of the
	// hook's decision.
	SystemMessage string `json:"systemMessage,omitempty"`
	// Decision "block" (with Reason) blocks: denies a prompt or tool call,
	// keeps a run going from the Stop event, tells the model after a tool
	// ran. "approve" is PreToolUse's deprecated allow.
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// HookSpecificOutput carries the event's own fields.
	HookSpecificOutput *SpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// SpecificOutput is the hookSpecificOutput of an Output.
type SpecificOutput struct {
	HookEventName HookEvent `json:"hookEventName"`
	// PreToolUse: allow, deny, ask or defer, and why.
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
	// UpdatedInput replaces the tool's input (PreToolUse).
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	// AdditionalContext is text for the model.
	AdditionalContext string `json:"additionalContext,omitempty"`
	// UpdatedToolOutput (UpdatedMCPToolOutput for MCP tools) replaces the
	// tool's output (PostToolUse).
	UpdatedToolOutput    json.RawMessage `json:"updatedToolOutput,omitempty"`
	UpdatedMCPToolOutput json.RawMessage `json:"updatedMCPToolOutput,omitempty"`
	// Decision answers a PermissionRequest.
	Decision *PermissionDecision `json:"decision,omitempty"`
}

// PermissionDecision is a PermissionRequest hook's answer.
type PermissionDecision struct {
	// Behavior is "allow" or "deny".
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
	Interrupt    bool            `json:"interrupt,omitempty"`
}

// Permission decisions of PreToolUse.
const (
	PermissionAllow = "allow"
	PermissionDeny  = "deny"
	PermissionAsk   = "ask"
	PermissionDefer = "defer"
)

// DecisionBlock is the "decision" that blocks.
const DecisionBlock = "block"

// Reply is what one hook answered: a command hook's exit status, stdout and
// stderr; an http hook's body as Stdout with ExitCode 0.
type Reply struct {
	ExitCode       int
	Stdout, Stderr []byte
	// StdoutCut and StderrCut count the bytes left out of Stdout and
	// Stderr by the output cap.
	StdoutCut, StderrCut int64
}

// Decide reads a hook's Reply on ev (an event of one of event's Stages) as
// an interceptor's decision, following Claude Code's hook protocol as
// docs/PROTOCOL.md, "Claude Code hooks", lays it out:
//
//   - exit 0: stdout, when it starts with "{", is an Output; otherwise it
//     is plain text (context for the model on UserPromptSubmit, ignored
//     elsewhere);
//   - exit 2: blocks with stderr as the reason (deny a tool call or a
//     prompt, keep the run going from stop, tell the model after a tool);
//   - any other status: a non-blocking error, wrapping ErrHookExit.
//
// Output that does not parse, or that says something the event cannot
// (a permissionDecision that is none of Claude Code's, updatedInput that
// is not an object, a Stop block without a reason), is an error wrapping
// interceptors.ErrBadReply. On an event whose stage is observe-only the
// decision is nil whatever the hook answered.
func Decide(event HookEvent, ev *events.Event, r Reply) (*interceptors.Decision, error) {
	if !firesOn(event, ev.Stage) {
		return nil, fmt.Errorf("%w: %s does not fire %s hooks", ErrUnmapped, ev.Stage, event)
	}
	switch r.ExitCode {
	case 0:
	case 2:
		return blocked(event, ev, strings.TrimSpace(string(r.Stderr)))
	default:
		msg := strings.TrimSpace(string(r.Stderr))
		if msg == "" {
			msg = strings.TrimSpace(string(r.Stdout))
		}
		return nil, fmt.Errorf("%w: exit status %d (Claude Code's non-blocking error): %s", ErrHookExit, r.ExitCode, excerpt(msg, 2000))
	}
	out := bytes.TrimSpace(r.Stdout)
	if len(out) == 0 || out[0] != '{' {
		text := string(out)
		if r.StdoutCut > 0 && text != "" {
			text += fmt.Sprintf("\n(hook output cut: %d more bytes were left out)", r.StdoutCut)
		}
		return decidePlain(event, ev, text)
	}
	if r.StdoutCut > 0 {
		return nil, fmt.Errorf("%w: the hook's JSON output was cut at the output cap (%d more bytes left out), so it cannot be read", interceptors.ErrBadReply, r.StdoutCut)
	}
	o, err := ParseOutput(out)
	if err != nil {
		return nil, err
	}
	return o.Decide(event, ev)
}

// ParseOutput reads a JSON Output; the error wraps interceptors.ErrBadReply.
func ParseOutput(b []byte) (*Output, error) {
	var o Output
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("%w: hook output is not Claude Code's JSON output: %v (output %.120q)", interceptors.ErrBadReply, err, b)
	}
	return &o, nil
}

// blocked is exit status 2 on event: stderr is the reason.
func blocked(event HookEvent, ev *events.Event, reason string) (*interceptors.Decision, error) {
	switch ev.Stage {
	case events.StageIntake, events.StageToolBefore:
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: reason}, nil
	case events.StageStop:
		reason = cmp.Or(reason, "blocked by a Stop hook")
		return &interceptors.Decision{Kind: interceptors.Continue, Reason: reason, Context: reason}, nil
	case events.StageToolAfter: // the tool ran: Claude Code shows stderr to the model
		return &interceptors.Decision{Kind: interceptors.Allow, Context: reason}, nil
	case events.StageSubagentBefore: // SubagentStart cannot block
		d := &interceptors.Decision{Kind: interceptors.Allow}
		if reason != "" {
			d.Warnings = []string{reason}
		}
		return d, nil
	}
	return nil, nil // observe-only
}

// decidePlain is exit 0 with output that is not JSON.
func decidePlain(event HookEvent, ev *events.Event, text string) (*interceptors.Decision, error) {
	if ev.Stage != events.StageIntake || text == "" {
		return nil, nil
	}
	return appendText(ev, "prompt", text)
}

// Decide is the decision an Output means on ev, an event of one of event's
// Stages (see the package's Decide).
func (o *Output) Decide(event HookEvent, ev *events.Event) (*interceptors.Decision, error) {
	if !firesOn(event, ev.Stage) {
		return nil, fmt.Errorf("%w: %s does not fire %s hooks", ErrUnmapped, ev.Stage, event)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s hook output: %s", interceptors.ErrBadReply, event, fmt.Sprintf(format, args...))
	}
	hs := o.HookSpecificOutput
	if hs == nil {
		hs = &SpecificOutput{}
	}
	if hs.HookEventName != "" && hs.HookEventName != event {
		return nil, bad("hookSpecificOutput is for %s", hs.HookEventName)
	}
	switch o.Decision {
	case "", DecisionBlock:
	case "approve":
		if event != PreToolUse {
			return nil, bad("decision %q is PreToolUse's only", o.Decision)
		}
	default:
		return nil, bad("decision %q (want %q)", o.Decision, DecisionBlock)
	}
	if !ev.Stage.Interceptable() {
		return nil, nil // observe-only: what the hook says changes nothing
	}
	var warnings []string
	if o.SystemMessage != "" {
		warnings = append(warnings, o.SystemMessage)
	}
	d := &interceptors.Decision{Kind: interceptors.Allow}
	if o.Continue != nil && !*o.Continue {
		switch ev.Stage {
		case events.StageToolBefore, events.StageStop:
			d.Kind = interceptors.Stop
		case events.StageToolAfter:
			return nil, bad("continue false cannot stop the run after a tool ran (hookbus' tool.after accepts allow and modify); stopReason %q", o.StopReason)
		default: // intake, subagent.before: refused, the closest to stopping
			d.Kind = interceptors.Deny
		}
		d.Reason, d.Warnings = o.StopReason, warnings
		return d, nil
	}
	var err error
	switch ev.Stage {
	case events.StageToolBefore:
		d, err = o.preToolUse(ev, hs, bad)
	case events.StageToolAfter:
		d, err = o.postToolUse(ev, hs, bad)
	case events.StageIntake:
		switch {
		case o.Decision == DecisionBlock:
			d = &interceptors.Decision{Kind: interceptors.Deny, Reason: o.Reason}
		case hs.AdditionalContext != "":
			d, err = appendText(ev, "prompt", hs.AdditionalContext)
		}
	case events.StageSubagentBefore:
		if o.Decision == DecisionBlock {
			warnings = append(warnings, "SubagentStart cannot block: decision block ignored")
		}
		if hs.AdditionalContext != "" {
			d, err = appendText(ev, "instruction", hs.AdditionalContext)
		}
	case events.StageStop:
		if o.Decision == DecisionBlock {
			if o.Reason == "" {
				return nil, bad("decision block without a reason: the reason is what the model is told to do next")
			}
			d = &interceptors.Decision{Kind: interceptors.Continue, Reason: o.Reason, Context: o.Reason}
		}
	}
	if err != nil {
		return nil, err
	}
	d.Warnings = append(warnings, d.Warnings...)
	return d, nil
}

func (o *Output) preToolUse(ev *events.Event, hs *SpecificOutput, bad func(string, ...any) error) (*interceptors.Decision, error) {
	d := &interceptors.Decision{Kind: interceptors.Allow, Reason: hs.PermissionDecisionReason}
	pd := hs.PermissionDecision
	if pd == "" { // the deprecated top-level decision
		switch o.Decision {
		case DecisionBlock:
			pd = PermissionDeny
		case "approve":
			pd = PermissionAllow
		}
		d.Reason = cmp.Or(d.Reason, o.Reason)
	}
	if len(hs.UpdatedInput) > 0 && firstByte(hs.UpdatedInput) != '{' {
		return nil, bad("updatedInput is not a JSON object")
	}
	switch pd {
	case PermissionDeny:
		d.Kind = interceptors.Deny
		return d, nil
	case PermissionAsk:
		d.Kind = interceptors.Ask
		if len(hs.UpdatedInput) > 0 {
			d.Warnings = append(d.Warnings, "updatedInput ignored with ask: the call is asked about as it stands")
		}
	case "", PermissionAllow, PermissionDefer:
		if len(hs.UpdatedInput) > 0 {
			data, err := setJSON(ev.Data, hs.UpdatedInput, "call", "arguments")
			if err != nil {
				return nil, bad("%v", err)
			}
			d.Kind, d.Data = interceptors.Modify, data
		}
	default:
		return nil, bad("permissionDecision %q (want allow, deny, ask or defer)", pd)
	}
	if hs.AdditionalContext != "" {
		d.Warnings = append(d.Warnings, "additionalContext not given to the model: hookbus gives context only after the tool ran (PostToolUse)")
	}
	return d, nil
}

func (o *Output) postToolUse(ev *events.Event, hs *SpecificOutput, bad func(string, ...any) error) (*interceptors.Decision, error) {
	d := &interceptors.Decision{Kind: interceptors.Allow}
	var ctx []string
	if o.Decision == DecisionBlock && o.Reason != "" {
		ctx = append(ctx, o.Reason) // the tool ran: Claude Code gives the reason to the model
	}
	if hs.AdditionalContext != "" {
		ctx = append(ctx, hs.AdditionalContext)
	}
	d.Context = strings.Join(ctx, "\n")
	updated := hs.UpdatedToolOutput
	if len(updated) == 0 {
		updated = hs.UpdatedMCPToolOutput
	}
	if len(updated) > 0 {
		if !json.Valid(updated) {
			return nil, bad("updatedToolOutput is not JSON")
		}
		data, err := setJSON(ev.Data, jsonString(ResultContent(updated)), "result", "content")
		if err != nil {
			return nil, bad("%v", err)
		}
		d.Kind, d.Data = interceptors.Modify, data
	}
	return d, nil
}

// appendText is a modify that adds text, after a blank line, to the string
// field of ev's payload: Claude Code's additionalContext on a prompt or a
// sub-agent's instruction, which hookbus' payloads carry no other place for.
func appendText(ev *events.Event, field, text string) (*interceptors.Decision, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(ev.Data, &p); err != nil {
		return nil, fmt.Errorf("%w: %s payload: %v", events.ErrPayload, ev.Stage, err)
	}
	var cur string
	if raw, ok := p[field]; ok {
		if err := json.Unmarshal(raw, &cur); err != nil {
			return nil, fmt.Errorf("%w: %s payload: %s is not a string", events.ErrPayload, ev.Stage, field)
		}
	}
	if cur != "" {
		cur += "\n\n"
	}
	data, err := setJSON(ev.Data, jsonString(cur+text), field)
	if err != nil {
		return nil, err
	}
	return &interceptors.Decision{Kind: interceptors.Modify, Data: data}, nil
}

// setJSON returns doc with the member at path (object keys) set to value;
// the objects on the way must exist.
func setJSON(doc json.RawMessage, value json.RawMessage, path ...string) (json.RawMessage, error) {
	if len(path) == 0 {
		return value, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("payload has no object to set %s in", strings.Join(path, "."))
	}
	inner, err := setJSON(obj[path[0]], value, path[1:]...)
	if err != nil {
		return nil, err
	}
	obj[path[0]] = inner
	return json.Marshal(obj)
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// excerpt cuts s to at most n bytes on a rune boundary, saying so.
func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d more bytes)", len(s)-cut)
}
