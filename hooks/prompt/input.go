package prompt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// Arguments is the placeholder of a prompt template that the event's JSON
// replaces (Claude Code's).
const Arguments = "$ARGUMENTS"

// Input is the JSON a prompt or agent hook's model reads ($ARGUMENTS): the
// stage event's attributes, named as Claude Code's hook input names its
// own (hook_event_name, session_id), and its payload under "data".
//
//	{"hook_event_name":"tool.before","agent_id":"ops","session_id":"s1","run_id":"01J...",
//	 "event_id":"01J...","step":2,"subject":"Bash",
//	 "data":{"call":{"id":"call_2_1","name":"Bash","arguments":{"command":"rm -rf /tmp/x"}}}}
type Input struct {
	// HookEventName is the stage.
	HookEventName   string          `json:"hook_event_name"`
	AgentID         string          `json:"agent_id"`
	SessionID       string          `json:"session_id"`
	RunID           string          `json:"run_id"`
	EventID         string          `json:"event_id"`
	Step            int             `json:"step"`
	Subject         string          `json:"subject,omitempty"`
	ParentAgentID   string          `json:"parent_agent_id,omitempty"`
	ParentSessionID string          `json:"parent_session_id,omitempty"`
	ParentRunID     string          `json:"parent_run_id,omitempty"`
	DataRef         string          `json:"dataref,omitempty"`
	Data            json.RawMessage `json:"data"`
}

// EventInput is the default input of a hook: ev as an Input.
func EventInput(ev *events.Event) (json.RawMessage, error) {
	data := ev.Data
	if len(bytes.TrimSpace(data)) == 0 {
		data = json.RawMessage("null")
	}
	b, err := json.Marshal(Input{
		HookEventName: string(ev.Stage), AgentID: ev.AgentID, SessionID: ev.SessionID, RunID: ev.RunID,
		EventID: ev.ID, Step: ev.Step, Subject: ev.Subject, ParentAgentID: ev.ParentAgentID,
		ParentSessionID: ev.ParentSessionID, ParentRunID: ev.ParentRunID, DataRef: ev.DataRef, Data: data,
	})
	if err != nil {
		return nil, fmt.Errorf("prompt hook: event %s as input: %w", ev.ID, err)
	}
	return b, nil
}

// Render fills a prompt template with the input JSON: every $ARGUMENTS is
// replaced by it; a template without $ARGUMENTS gets it appended after a
// blank line.
func Render(template string, input []byte) string {
	if strings.Contains(template, Arguments) {
		return strings.ReplaceAll(template, Arguments, string(input))
	}
	return template + "\n\n" + string(input)
}

// volatile are the payload fields that differ between two events asking
// the same question (ids of one call or one child run), left out of the
// decision cache's input hash, per stage.
var volatile = map[events.Stage][][]string{
	events.StageToolBefore:     {{"call", "id"}},
	events.StageToolAfter:      {{"call", "id"}, {"result", "call_id"}},
	events.StageSubagentBefore: {{"call_id"}, {"session_id"}, {"run_id"}},
}

// inputHash is the hex SHA-256 of what a decision is about: the stage, the
// agent, the subject and the payload (without its volatile ids), in
// canonical JSON (keys sorted, no spaces), so two events that ask the same
// question hash alike whichever run, session or call asks it.
func inputHash(ev *events.Event) (string, error) {
	var data any
	if len(bytes.TrimSpace(ev.Data)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(ev.Data))
		dec.UseNumber()
		if err := dec.Decode(&data); err != nil {
			return "", fmt.Errorf("prompt hook: event %s data: %w", ev.ID, err)
		}
	}
	for _, path := range volatile[ev.Stage] {
		drop(data, path)
	}
	b, err := json.Marshal(struct {
		Stage   events.Stage `json:"stage"`
		Agent   string       `json:"agent"`
		Subject string       `json:"subject"`
		DataRef string       `json:"dataref,omitempty"`
		Data    any          `json:"data"`
	}{ev.Stage, ev.AgentID, ev.Subject, ev.DataRef, data})
	if err != nil {
		return "", fmt.Errorf("prompt hook: event %s: %w", ev.ID, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// drop deletes the field at path from v, if it is there.
func drop(v any, path []string) {
	for i, name := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if i == len(path)-1 {
			delete(m, name)
			return
		}
		v = m[name]
	}
}
