package cline

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/interceptors"
)

// Names of Cline as a harness.
const (
	// HarnessName is its name on the command line (loop agent-hook
	// --harness cline) and in harness.event records.
	HarnessName = "cline"
	// DefaultAgent is the agent id its sessions are recorded under by
	// default.
	DefaultAgent = "cline"
)

// DefaultHookLimit is how long Cline waits for a hook.
const DefaultHookLimit = 30 * time.Second

// Cline's hook events, each also the file name of its hook.
const (
	TaskStart        = "TaskStart"
	TaskResume       = "TaskResume"
	UserPromptSubmit = "UserPromptSubmit"
	PreToolUse       = "PreToolUse"
	PostToolUse      = "PostToolUse"
	PreCompact       = "PreCompact"
	TaskCancel       = "TaskCancel"
	TaskComplete     = "TaskComplete"
)

// table is Cline's hook events and the stage each is recorded as, in the
// order a session meets them.
var table = harness.Table{
	{Name: TaskStart, Stage: events.StageRunStarted},
	{Name: TaskResume, Stage: events.StageRunStarted},
	{Name: UserPromptSubmit, Stage: events.StageIntake},
	{Name: PreToolUse, Stage: events.StageToolBefore},
	{Name: PostToolUse, Stage: events.StageToolAfter},
	{Name: PreCompact, Stage: events.StageCompactBefore},
	{Name: TaskCancel, Stage: events.StageRunCompleted},
	{Name: TaskComplete, Stage: events.StageStop},
}

// Events returns Cline's hook events (each the file name of its hook), in
// the order a session meets them.
func Events() []string { return table.Names() }

// StageOf returns the stage Cline's event is recorded as; "" for a
// harness.event.
func StageOf(event string) events.Stage { return table.StageOf(event) }

// Harness is Cline as a harness of the bridge (harness.Protocol).
type Harness struct{}

// Name is "cline".
func (Harness) Name() string { return HarnessName }

// Agent is "cline".
func (Harness) Agent() string { return DefaultAgent }

// Title is "Cline": its name in the record's words.
func (Harness) Title() string { return "Cline" }

// Parse reads one Cline hook input (ParseInput).
func (Harness) Parse(raw []byte) (harness.Input, error) {
	in, err := ParseInput(raw)
	if err != nil {
		return nil, err
	}
	return in, nil
}

// Input is Cline's hook input, as far as hookbus reads it.
type Input struct {
	TaskID   string `json:"taskId"`
	HookName string `json:"hookName"`
	// ToolCall is PreToolUse's call, ToolResult PostToolUse's.
	ToolCall   *Call `json:"tool_call,omitempty"`
	ToolResult *struct {
		Call
		Output json.RawMessage `json:"output,omitempty"`
	} `json:"tool_result,omitempty"`
	PreToolUseData *struct {
		ToolName   string            `json:"toolName"`
		Parameters map[string]string `json:"parameters"`
	} `json:"preToolUse,omitempty"`
	PostToolUseData *struct {
		ToolName string `json:"toolName"`
		Result   string `json:"result"`
		Success  *bool  `json:"success"`
	} `json:"postToolUse,omitempty"`
	UserPromptData *struct {
		Prompt string `json:"prompt"`
	} `json:"userPromptSubmit,omitempty"`
	Turn *struct {
		OutputText string `json:"outputText"`
		Status     string `json:"status"`
	} `json:"turn,omitempty"`

	event string
	raw   []byte
}

// Call is a tool call as Cline's input gives it.
type Call struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ParseInput reads a Cline hook input: its event is named by the field
// the input carries (preToolUse: PreToolUse, ...), else by its hookName.
// The error wraps harness.ErrBadInput.
func ParseInput(b []byte) (*Input, error) {
	var in Input
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&in); err != nil {
		return nil, fmt.Errorf("%w: %v (body %.80q)", harness.ErrBadInput, err, b)
	}
	if in.TaskID == "" {
		return nil, fmt.Errorf("%w: no taskId", harness.ErrBadInput)
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(b, &fields)
	for _, e := range table {
		if _, ok := fields[eventKey(e.Name)]; ok {
			in.event = e.Name
			break
		}
	}
	in.event = cmp.Or(in.event, in.HookName)
	if in.event == "" {
		return nil, fmt.Errorf("%w: no event: none of %s, and no hookName", harness.ErrBadInput, strings.Join(eventKeys(), ", "))
	}
	in.raw = bytes.TrimSpace(b)
	return &in, nil
}

// eventKey is the field of an input that names event: the event's name
// in lowerCamelCase (preToolUse: PreToolUse).
func eventKey(event string) string { return strings.ToLower(event[:1]) + event[1:] }

func eventKeys() []string {
	out := make([]string, len(table))
	for i, e := range table {
		out[i] = eventKey(e.Name)
	}
	return out
}

// Event is the hook event: the field that names it, as the file name of
// its hook (PreToolUse).
func (in *Input) Event() string { return in.event }

// Session is taskId.
func (in *Input) Session() string { return in.TaskID }

// Raw is the input as read.
func (in *Input) Raw() []byte { return in.raw }

// Limit is how long Cline waits for a hook.
func (in *Input) Limit() time.Duration { return DefaultHookLimit }

// call is the tool call of a tool event.
func (in *Input) call() (events.ToolCall, error) {
	var c Call
	switch {
	case in.ToolCall != nil:
		c = *in.ToolCall
	case in.ToolResult != nil:
		c = in.ToolResult.Call
	case in.PreToolUseData != nil:
		c.Name = in.PreToolUseData.ToolName
	case in.PostToolUseData != nil:
		c.Name = in.PostToolUseData.ToolName
	}
	if c.Name == "" {
		return events.ToolCall{}, fmt.Errorf("%w: %s: no tool name", harness.ErrBadInput, in.event)
	}
	args := bytes.TrimSpace(c.Input)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] != '{' {
		return events.ToolCall{}, fmt.Errorf("%w: %s: the tool's input is not a JSON object", harness.ErrBadInput, in.event)
	}
	return events.ToolCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(args)}.WithAction(events.HarnessCline), nil
}

// Map returns the stage event the input is recorded as, nil for an event
// recorded as a harness.event. The error wraps harness.ErrBadInput for a tool
// event without a tool.
func (in *Input) Map() (*harness.Mapped, error) {
	st := StageOf(in.event)
	if st == "" {
		return nil, nil
	}
	m := &harness.Mapped{Stage: st}
	switch in.event {
	case TaskStart:
		m.Payload = events.RunStarted{}
	case TaskResume:
		m.Payload = events.RunStarted{Resumed: true}
	case UserPromptSubmit:
		p := ""
		if in.UserPromptData != nil {
			p = in.UserPromptData.Prompt
		}
		m.Payload = events.Intake{Prompt: p}
	case PreToolUse, PostToolUse:
		call, err := in.call()
		if err != nil {
			return nil, err
		}
		m.Subject = call.Name
		if in.event == PreToolUse {
			m.Payload = events.ToolBefore{Call: call}
			break
		}
		res := events.ToolResult{CallID: call.ID, Name: call.Name}
		if p := in.PostToolUseData; p != nil {
			res.Content = p.Result
			res.IsError = p.Success != nil && !*p.Success
		} else if in.ToolResult != nil {
			res.Content = string(in.ToolResult.Output)
		}
		m.Payload = events.ToolAfter{Call: call, Result: res}
	case PreCompact:
		m.Payload = events.CompactBefore{}
	case TaskCancel:
		m.Payload = events.RunCompleted{Reason: events.ReasonInterrupted, Detail: "Cline task cancelled"}
	case TaskComplete:
		p := events.Stop{Reason: events.ReasonDone}
		if in.Turn != nil {
			p.Answer = in.Turn.OutputText
		}
		m.Payload = p
	}
	return m, nil
}

// Output is a Cline hook's answer (stdout).
type Output struct {
	// Cancel ends the task.
	Cancel bool `json:"cancel,omitempty"`
	// ErrorMessage is shown when the task is cancelled.
	ErrorMessage string `json:"errorMessage,omitempty"`
	// Context is added to the conversation as a user message.
	Context string `json:"context,omitempty"`
	// OverrideInput replaces the tool call's input (PreToolUse).
	OverrideInput json.RawMessage `json:"overrideInput,omitempty"`
}

// Answer words the outcome as Cline's output:
//
//	PreToolUse        deny, mock → a shell call's input replaced by one that
//	                  prints the reason and fails, the reason as context;
//	                  another tool's call cancelled with the reason;
//	                  modify → overrideInput; stop → cancel
//	UserPromptSubmit  deny → cancel; text added → context
//	PostToolUse       context → context; stop → cancel
//	TaskComplete      stop → cancel
//
// Warnings go to stderr. An event with nothing to say answers nothing.
func (in *Input) Answer(out *harness.Outcome) (*harness.Reply, error) {
	st := StageOf(in.event)
	if out == nil || st == "" {
		return &harness.Reply{}, nil
	}
	w := &words{in: in, notes: append([]string(nil), out.Warnings...)}
	if c := out.Chain; c != nil {
		if st != events.StageToolBefore && st != events.StageIntake { // the text for the model goes as context
			w.o.Context = strings.Join(c.Context, "\n")
		}
		if c.Decision == interceptors.Mock && c.Mock != nil && c.Mock.Content == "" {
			c = &interceptors.ChainResult{Decision: interceptors.Deny, Reason: c.Reason, Records: c.Records}
		}
		if c.Decision == interceptors.Modify && st == events.StageToolAfter {
			c = &interceptors.ChainResult{Decision: interceptors.Allow, Context: c.Context, Records: c.Records}
		}
		if err := harness.Say(w, st, c); err != nil {
			return nil, err
		}
	}
	return reply(w.o, w.notes), nil
}

// words say an outcome as Cline's Output on in.
type words struct {
	in    *Input
	o     Output
	notes []string
}

func (w *words) Note(text string)          { w.notes = append(w.notes, text) }
func (w *words) Ask(reason string)         { w.Deny(reason) }
func (w *words) Stop(reason string)        { w.o.Cancel, w.o.ErrorMessage = true, stopped(reason) }
func (w *words) Context(text string)       { w.o.Context = text }
func (w *words) Call(args json.RawMessage) { w.o.OverrideInput = args }
func (w *words) Again(string)              {} // the text for the model went as context
func (w *words) Result(events.ToolAfter)   {}

func (w *words) Deny(reason string) {
	if w.in.event == UserPromptSubmit {
		w.o = Output{Cancel: true, ErrorMessage: "hookbus refused this prompt: " + reason}
		return
	}
	w.o = w.in.deny(reason)
}

func (w *words) Prompted() *string {
	if d := w.in.UserPromptData; d != nil {
		return &d.Prompt
	}
	return nil
}

func (w *words) Replaced(string) {
	w.Note("hookbus interceptors rewrote the prompt, which Cline's hook can only add to: the prompt goes as it was")
}

func stopped(reason string) string {
	if reason == "" {
		return "hookbus stopped the task"
	}
	return "hookbus stopped the task: " + reason
}

// deny is the answer that refuses the PreToolUse call with reason and lets
// the task go on: a shell call runs a command that prints the reason and
// fails instead (the model reads it as the call's result, and as context);
// another tool's call cannot be replaced so and is cancelled.
func (in *Input) deny(reason string) Output {
	if strings.TrimSpace(reason) == "" {
		reason = "denied by a hookbus interceptor"
	}
	msg := "hookbus denied this call: " + reason
	name := ""
	if in.ToolCall != nil {
		name = in.ToolCall.Name
	} else if in.PreToolUseData != nil {
		name = in.PreToolUseData.ToolName
	}
	cmd := "printf '%s\\n' " + shellQuote(msg) + " >&2; exit 1"
	switch name {
	case "run_commands":
		b, _ := json.Marshal(map[string]any{"commands": []string{cmd}})
		return Output{OverrideInput: b, Context: msg}
	case "execute_command":
		b, _ := json.Marshal(map[string]any{"command": cmd})
		return Output{OverrideInput: b, Context: msg}
	}
	return Output{Cancel: true, ErrorMessage: msg, Context: msg}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func reply(o Output, notes []string) *harness.Reply {
	r := &harness.Reply{Stderr: strings.Join(notes, "\n")}
	if o.Cancel || o.Context != "" || o.ErrorMessage != "" || len(o.OverrideInput) > 0 {
		r.Stdout, _ = json.Marshal(o)
	}
	return r
}

// Outage is the answer when hookbus cannot record or decide the event:
// with PolicyIgnore it proceeds, with a warning on stderr; with PolicyFail
// a tool call is denied (as Answer denies it) and a prompt refused.
func (in *Input) Outage(policy interceptors.Policy, cause error) *harness.Reply {
	msg := fmt.Sprintf("hookbus could not record or check this %s event (%v)", in.event, cause)
	if policy != interceptors.PolicyFail || StageOf(in.event) == "" {
		return &harness.Reply{Stderr: msg + "; it proceeds unchecked"}
	}
	reason := "hookbus is unavailable and its policy is to fail closed: " + cause.Error()
	switch in.event {
	case PreToolUse:
		return reply(in.deny(reason), []string{msg + "; blocked (policy fail)"})
	case UserPromptSubmit:
		return reply(Output{Cancel: true, ErrorMessage: reason}, []string{msg + "; blocked (policy fail)"})
	}
	return &harness.Reply{Stderr: msg + "; it proceeds unchecked"}
}
