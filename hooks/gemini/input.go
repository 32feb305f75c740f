package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/harness"
)

// Input is Gemini CLI's hook input: what a command hook reads on stdin.
// Fields an event does not carry are left out.
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	Timestamp      string `json:"timestamp,omitempty"`

	// BeforeTool and AfterTool.
	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    json.RawMessage `json:"tool_input,omitempty"`
	ToolResponse *ToolResponse   `json:"tool_response,omitempty"`
	// MCPContext names the MCP server and tool of an MCP tool's call.
	MCPContext *MCPContext `json:"mcp_context,omitempty"`

	// BeforeAgent and AfterAgent.
	Prompt         *string `json:"prompt,omitempty"`
	PromptResponse *string `json:"prompt_response,omitempty"`
	StopHookActive *bool   `json:"stop_hook_active,omitempty"`

	// SessionStart's source, SessionEnd's reason, PreCompress' trigger.
	Source  string `json:"source,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Trigger string `json:"trigger,omitempty"`

	raw []byte
}

// MCPContext is BeforeTool's and AfterTool's mcp_context.
type MCPContext struct {
	ServerName string `json:"server_name,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	URL        string `json:"url,omitempty"`
}

// ToolResponse is AfterTool's tool_response.
type ToolResponse struct {
	LLMContent    json.RawMessage `json:"llmContent,omitempty"`
	ReturnDisplay json.RawMessage `json:"returnDisplay,omitempty"`
	Error         json.RawMessage `json:"error,omitempty"`
}

// Harness is Gemini CLI as a harness of the bridge (harness.Protocol).
type Harness struct{}

// Names of Gemini CLI as a harness.
const (
	// HarnessName is its name on the command line (loop agent-hook
	// --harness gemini) and in harness.event records.
	HarnessName = "gemini"
	// DefaultAgent is the agent id its sessions are recorded under by
	// default.
	DefaultAgent = "gemini-cli"
)

// Name is "gemini".
func (Harness) Name() string { return HarnessName }

// Agent is "gemini-cli".
func (Harness) Agent() string { return DefaultAgent }

// Parse reads one Gemini CLI hook input (ParseInput).
func (Harness) Parse(raw []byte) (harness.Input, error) {
	in, err := ParseInput(raw)
	if err != nil {
		return nil, err
	}
	return in, nil
}

// ParseInput reads a Gemini CLI hook input. The error wraps harness.ErrBadInput.
func ParseInput(b []byte) (*Input, error) {
	var in Input
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&in); err != nil {
		return nil, fmt.Errorf("%w: %v (body %.80q)", harness.ErrBadInput, err, b)
	}
	if in.HookEventName == "" {
		return nil, fmt.Errorf("%w: no hook_event_name", harness.ErrBadInput)
	}
	in.raw = bytes.TrimSpace(b)
	return &in, nil
}

// Event is hook_event_name.
func (in *Input) Event() string { return in.HookEventName }

// Session is session_id.
func (in *Input) Session() string { return in.SessionID }

// Raw is the input as read.
func (in *Input) Raw() []byte { return in.raw }

// Limit is Gemini CLI's default hook timeout (60 s): its settings give
// each hook its own, in milliseconds.
func (in *Input) Limit() time.Duration { return DefaultHookLimit }

// Map returns the stage event the input is recorded as (StageOf; an
// automatic PreCompress, which Gemini CLI fires before every model call
// whether it compresses or not, is a harness.event), nil for an event
// recorded as a harness.event. The error wraps harness.ErrBadInput for a
// tool event without tool_name or with a tool_input that is not an object.
// Gemini CLI's calls have no id: their call id is empty.
func (in *Input) Map() (*harness.Mapped, error) {
	st := in.stage()
	if st == "" {
		return nil, nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", harness.ErrBadInput, in.HookEventName, fmt.Sprintf(format, args...))
	}
	m := &harness.Mapped{Stage: st}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	var call events.ToolCall
	if st == events.StageToolBefore || st == events.StageToolAfter {
		if in.ToolName == "" {
			return nil, bad("no tool_name")
		}
		args := bytes.TrimSpace(in.ToolInput)
		if len(args) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		if args[0] != '{' {
			return nil, bad("tool_input is not a JSON object")
		}
		call = events.ToolCall{Name: in.ToolName, Arguments: json.RawMessage(args)}.WithAction(events.HarnessGemini)
		if mc := in.MCPContext; mc != nil && mc.ServerName != "" && mc.ToolName != "" {
			a := events.MCPAction(mc.ServerName, mc.ToolName)
			call.Action = &a
		}
		m.Subject = in.ToolName
	}
	switch in.HookEventName {
	case SessionStart:
		m.Payload = events.RunStarted{Resumed: in.Source == "resume"}
	case BeforeAgent:
		m.Payload = events.Intake{Prompt: str(in.Prompt)}
	case BeforeTool:
		m.Payload = events.ToolBefore{Call: call}
	case AfterTool:
		res := events.ToolResult{Name: call.Name}
		if r := in.ToolResponse; r != nil {
			res.Content = text(r.LLMContent)
			if e := bytes.TrimSpace(r.Error); len(e) > 0 && string(e) != "null" {
				res.IsError = true
				if res.Content == "" {
					res.Content = text(e)
				}
			}
		}
		m.Payload = events.ToolAfter{Call: call, Result: res}
	case PreCompress:
		m.Payload = events.CompactBefore{Manual: in.Trigger == "manual"}
	case AfterAgent:
		p := events.Stop{Reason: events.ReasonDone, Answer: str(in.PromptResponse)}
		if in.StopHookActive != nil && *in.StopHookActive {
			p.Continues = 1
		}
		m.Payload = p
	case SessionEnd:
		m.Payload = events.RunCompleted{Reason: events.ReasonDone, Detail: "Gemini CLI session ended: " + in.Reason}
	}
	return m, nil
}

// text is a tool result's llmContent as text: a string as it is, the text
// of an array of parts (or of one part) joined, anything else as JSON.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	type part struct {
		Text *string `json:"text"`
	}
	var parts []part
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			if p.Text != nil {
				b.WriteString(*p.Text)
			}
		}
		if b.Len() > 0 {
			return b.String()
		}
	}
	var one part
	if json.Unmarshal(raw, &one) == nil && one.Text != nil {
		return *one.Text
	}
	var msg struct {
		Message *string `json:"message"`
	}
	if json.Unmarshal(raw, &msg) == nil && msg.Message != nil {
		return *msg.Message
	}
	return string(raw)
}

// stage is the stage the input is recorded as: StageOf its event, but
// none for a PreCompress of trigger auto (Gemini CLI fires it on every
// compression check, before it knows whether it will compress; only a
// manual one, /compress, is a compaction's start).
func (in *Input) stage() events.Stage {
	if in.HookEventName == PreCompress && in.Trigger != "manual" {
		return ""
	}
	return StageOf(in.HookEventName)
}
