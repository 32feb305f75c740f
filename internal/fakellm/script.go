package fakellm

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Paths of the endpoints a step may name (GeminiStreamPath gives a Gemini
// model's).
const (
	PathOpenAI    = "/v1/chat/completions"
	PathResponses = "/v1/responses" // OpenAI's Responses API (Codex CLI's wire_api = "responses")
	PathAnthropic = "/v1/messages"
)

// Step kinds.
const (
	KindResponse = "response" // status, headers and body (the default)
	KindTruncate = "truncate" // announce the whole body, send part of it, close the connection
	KindSSE      = "sse"      // a text/event-stream of Events
)

// Script is what a Server answers, step i to request i+1. As JSON:
//
//	{"name": "...", "path": "/v1/chat/completions", "steps": [
//	  {"note": "first reply", "status": 200, "headers": {"x-request-id": "req_1"}, "body": {...}},
//	  {"kind": "truncate", "body": {...}, "truncate_at": 40},
//	  {"delay_ms": 5000, "body": {...}},
//	  {"status": 429, "headers": {"retry-after": "2"}, "body": {"error": {...}}},
//	  {"kind": "sse", "events": [{"event": "message_start", "data": {...}}]}]}
type Script struct {
	Name string `json:"name,omitempty"`
	// Path, when set, is the path every step expects (a step's own Path
	// overrides it); a request on another path is unexpected.
	Path  string `json:"path,omitempty"`
	Steps []Step `json:"steps"`
}

// Step is one answer.
type Step struct {
	// Note says what the step stands for, for people reading the script.
	Note string `json:"note,omitempty"`
	// Path is the path this step expects ("" = the script's, or any).
	Path string `json:"path,omitempty"`
	// Kind is KindResponse (""), KindTruncate or KindSSE.
	Kind string `json:"kind,omitempty"`
	// Status is the HTTP status (default 200).
	Status int `json:"status,omitempty"`
	// Headers are added to the answer; Content-Type defaults to
	// application/json for Body, text/plain for BodyText and
	// text/event-stream for Events.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is a JSON body; BodyText a body that is not JSON (an HTML error
	// page from a proxy). At most one of them.
	Body     json.RawMessage `json:"body,omitempty"`
	BodyText string          `json:"body_text,omitempty"`
	// DelayMS delays the answer; the wait ends early when the client goes
	// away or the server closes.
	DelayMS int `json:"delay_ms,omitempty"`
	// TruncateAt is how many bytes of the body a truncate step sends
	// (default: half).
	TruncateAt int `json:"truncate_at,omitempty"`
	// Events are the events of an sse step.
	Events []Event `json:"events,omitempty"`
}

// Event is one server-sent event: "event: <Event>\ndata: <Data>\n\n", the
// data JSON on one line.
type Event struct {
	Event string          `json:"event,omitempty"`
	Data  json.RawMessage `json:"data"`
}

// Parse parses a script; an error wraps ErrBadScript and names the step.
func Parse(b []byte) (*Script, error) {
	var s Script
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadScript, err)
	}
	if len(s.Steps) == 0 {
		return nil, fmt.Errorf("%w: no steps", ErrBadScript)
	}
	for i := range s.Steps {
		if err := s.Steps[i].check(); err != nil {
			return nil, fmt.Errorf("%w: step %d: %v", ErrBadScript, i+1, err)
		}
	}
	return &s, nil
}

func (st *Step) check() error {
	switch st.Kind {
	case "", KindResponse:
	case KindTruncate:
		if len(st.Body) == 0 && st.BodyText == "" {
			return fmt.Errorf("a truncate step needs a body")
		}
	case KindSSE:
		if len(st.Events) == 0 {
			return fmt.Errorf("an sse step needs events")
		}
		for j, e := range st.Events {
			if !json.Valid(e.Data) {
				return fmt.Errorf("event %d data is not JSON", j+1)
			}
		}
	default:
		return fmt.Errorf("unknown kind %q (want %s, %s or %s)", st.Kind, KindResponse, KindTruncate, KindSSE)
	}
	if st.Status != 0 && (st.Status < 100 || st.Status > 599) {
		return fmt.Errorf("status %d is not an HTTP status", st.Status)
	}
	if len(st.Body) > 0 && st.BodyText != "" {
		return fmt.Errorf("body and body_text are exclusive")
	}
	if len(st.Body) > 0 && !json.Valid(st.Body) {
		return fmt.Errorf("body is not JSON (use body_text)")
	}
	if st.DelayMS < 0 || st.TruncateAt < 0 {
		return fmt.Errorf("delay_ms and truncate_at cannot be negative")
	}
	return nil
}

//go:embed testdata
var recorded embed.FS

// Recorded returns a recorded script by name: "openai/two_tool_steps" is
// testdata/openai/two_tool_steps.json. Recordings lists the names.
func Recorded(name string) (*Script, error) {
	b, err := recorded.ReadFile("testdata/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("%w: no recording %q", ErrBadScript, name)
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", name, err)
	}
	return s, nil
}

// MustRecorded is Recorded for tests and examples: it panics on error.
func MustRecorded(name string) *Script {
	s, err := Recorded(name)
	if err != nil {
		panic(err)
	}
	return s
}

// Recordings lists the names of the recorded scripts.
func Recordings() []string {
	var names []string
	_ = fs.WalkDir(recorded, "testdata", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && path.Ext(p) == ".json" {
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(p, "testdata/"), ".json"))
		}
		return nil
	})
	return names
}
