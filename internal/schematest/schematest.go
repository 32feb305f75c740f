// Package schematest holds hookbus' wire messages to the JSON Schemas of
// docs/schema (draft 2020-12, written by cmd/internal/schemagen), with an
// independent validator (santhosh-tekuri/jsonschema), for tests:
//
//	s := schematest.Load(t)
//	if err := s.Event(e); err != nil { ... }          // the envelope and the stage's payload
//	if err := s.Decision(reply.Data); err != nil { ... } // an interceptor's reply
//
// Its own tests validate every event of the recorded histories, of a live
// run on the embedded server, and every decision of the interception
// conformance suite.
package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schemas are the compiled schemas of docs/schema.
type Schemas struct {
	envelope, eventHeaders, requestHeaders, decision *jsonschema.Schema
	payloads                                         map[events.Stage]*jsonschema.Schema
}

// Dir is docs/schema in the repository this file is in.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "docs", "schema")
}

// Load compiles the schemas of Dir and fails t when they do not compile.
func Load(t testing.TB) *Schemas {
	t.Helper()
	s, err := Compile(Dir())
	if err != nil {
		t.Fatalf("schematest: %v", err)
	}
	return s
}

// Compile compiles the schemas in dir, asserting formats (date-time).
func Compile(dir string) (*Schemas, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	compile := func(name string) (*jsonschema.Schema, error) {
		s, err := c.Compile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", name, err)
		}
		return s, nil
	}
	s := &Schemas{payloads: make(map[events.Stage]*jsonschema.Schema)}
	for _, x := range []struct {
		dst  **jsonschema.Schema
		name string
	}{
		{&s.envelope, "cloudevent.schema.json"}, {&s.eventHeaders, "event-headers.schema.json"},
		{&s.requestHeaders, "request-headers.schema.json"}, {&s.decision, "decision.schema.json"},
	} {
		if *x.dst, err = compile(x.name); err != nil {
			return nil, err
		}
	}
	for _, st := range events.Stages() {
		if s.payloads[st], err = compile("payloads/" + string(st) + ".schema.json"); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{"run-request.schema.json", "wake.schema.json", "registration.schema.json", "hookbus.schema.json"} {
		if _, err := compile(name); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// validate checks the JSON document doc against sch.
func validate(sch *jsonschema.Schema, what string, doc []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("%s is not JSON: %v", what, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("%s does not match its schema: %v\n%s", what, err, clip(doc))
	}
	return nil
}

func clip(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// Structured validates one event in the CloudEvents structured JSON format
// (a line of a recorded history, observer replay --json) against
// cloudevent.schema.json, its data against the stage's payload schema.
func (s *Schemas) Structured(doc []byte) error { return validate(s.envelope, "event", doc) }

// Event validates e: its structured form (Structured), and its binary-mode
// headers as events.Encode writes them (EventHeaders).
func (s *Schemas) Event(e *events.Event) error {
	doc, err := json.Marshal(e.CloudEvent())
	if err != nil {
		return fmt.Errorf("event %s: %v", e.ID, err)
	}
	if err := validate(s.envelope, fmt.Sprintf("event %s (%s)", e.ID, e.Stage), doc); err != nil {
		return err
	}
	h, _, err := events.Encode(e)
	if err != nil {
		return fmt.Errorf("event %s: %v", e.ID, err)
	}
	return s.EventHeaders(h)
}

// Payload validates data against the payload schema of stage.
func (s *Schemas) Payload(stage events.Stage, data []byte) error {
	sch, ok := s.payloads[stage]
	if !ok {
		return fmt.Errorf("no payload schema for stage %q", stage)
	}
	return validate(sch, string(stage)+" payload", data)
}

// EventHeaders validates the headers of an event message.
func (s *Schemas) EventHeaders(h events.Header) error {
	return validate(s.eventHeaders, "event headers", flatten(h))
}

// RequestHeaders validates the headers of an interception request.
func (s *Schemas) RequestHeaders(h events.Header) error {
	return validate(s.requestHeaders, "request headers", flatten(h))
}

// Decision validates an interceptor's reply body; an empty body (allow)
// is valid.
func (s *Schemas) Decision(body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return validate(s.decision, "decision", body)
}

// flatten gives headers as one JSON object of their first values, the
// names as written (the schemas name them as hookbus writes them).
func flatten(h events.Header) []byte {
	m := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			m[k] = v[0]
		}
	}
	b, _ := json.Marshal(m) // strings always marshal
	return b
}

// ReadLines returns the non-empty lines of a file.
func ReadLines(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out, nil
}
