package main

import (
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/invopop/jsonschema"
)

// attr is one CloudEvents attribute or hookbus extension of an event, or
// a header of an event message that is not an attribute.
type attr struct {
	name     string // the attribute's name (its header is "ce-" + name), or the header's
	required bool
	// value is its schema in the structured (JSON) form; header values are
	// strings (headerValue).
	value func() *jsonschema.Schema
	doc   string
}

// attrs are the attributes hookbus events carry, in the order of
// docs/PROTOCOL.md's table ("Events"). TestEnvelopeNamesEveryAttribute holds
// them to what events.Encode writes.
var attrs = []attr{
	{"specversion", true, constant("1.0"), "The CloudEvents version."},
	{"id", true, pattern(ulid), "A ULID, unique per event. On an interception request, the request's own id: the stored event gets another."},
	{"source", true, nonEmpty, "The producer, e.g. hookbus/loop."},
	{"type", true, eventTypes, "hookbus.<stage>, e.g. hookbus.tool.before."},
	{"time", true, dateTime, "When the event was made: RFC 3339 with nanoseconds, UTC."},
	{"subject", false, str, "The tool's name on tool stages (the called agent's on subagent.before); absent elsewhere."},
	{"datacontenttype", false, constant(events.ContentTypeJSON), "The data is JSON (in binary mode: the content-type header)."},
	{events.ExtAgentID, true, id, "The agent's id (a subject token)."},
	{events.ExtSessionID, true, id, "The session's id (a subject token)."},
	{events.ExtRunID, true, id, "The run's id (a subject token)."},
	{events.ExtStep, true, step, "The step number (a CloudEvents Integer: 0 to 2147483647)."},
	{events.ExtSeq, true, pattern(`^[0-9]{12,}$`), "The per-run sequence, zero-padded to 12 digits (string order is numeric order)."},
	{events.ExtTraceparent, false, pattern(traceparentPattern), "W3C trace context: the span the event was produced in."},
	{events.ExtParentAgentID, false, id, "On the events of a child run (a sub-agent's): the agent that called it (all three parent ids, or none)."},
	{events.ExtParentSessionID, false, id, "On the events of a child run: the session of the run that called it."},
	{events.ExtParentRunID, false, id, "On the events of a child run: the run that called it."},
	{events.ExtPrevHash, false, pattern(`^[0-9a-f]{64}$`), "The chain hash of the run's previous event (by seq); absent on a run's first event."},
	{events.ExtSigner, false, pattern(`^A[A-Z2-7]{55}$`), "On a signed run's terminal event: the signer's public key, an nkey."},
	{events.ExtSignature, false, pattern(`^[A-Za-z0-9_-]+$`), "On a signed run's terminal event: the ed25519 signature of its chain hash, base64url without padding."},
	{events.ExtDataRef, false, pattern(`^[^/]+/.+$`), "Claim check: <bucket>/<object name> of the data in the object store, when the event was too large for a message (the data is then absent: the message body is empty)."},
}

// parents are the extensions a child run's events carry all of, or none.
var parents = []string{events.ExtParentAgentID, events.ExtParentSessionID, events.ExtParentRunID}

const (
	// ulid is a ULID as events.ValidateULID reads it (Crockford base32).
	ulid = `^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$`
	// idPattern is a subject token: no '.', '*', '>' or whitespace (events.ValidateID).
	idPattern = `^[^.*>\s]+$`
)

func constant(v string) func() *jsonschema.Schema {
	return func() *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Const: v} }
}

func pattern(p string) func() *jsonschema.Schema {
	return func() *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Pattern: p} }
}

func str() *jsonschema.Schema { return &jsonschema.Schema{Type: "string"} }

func nonEmpty() *jsonschema.Schema {
	one := uint64(1)
	return &jsonschema.Schema{Type: "string", MinLength: &one}
}

func dateTime() *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Format: "date-time"} }

func id() *jsonschema.Schema {
	one, most := uint64(1), uint64(events.MaxIDLen)
	return &jsonschema.Schema{Type: "string", Pattern: idPattern, MinLength: &one, MaxLength: &most}
}

func step() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Minimum: "0", Maximum: "2147483647"}
}

func eventTypes() *jsonschema.Schema {
	var types []string
	for _, st := range events.Stages() {
		types = append(types, st.Type())
	}
	return &jsonschema.Schema{Type: "string", Enum: anys(types)}
}

// envelope is the schema of an event in the CloudEvents structured JSON
// format (what observer replay --json prints, the recorded histories'
// lines): the attributes, and data checked against the payload schema of
// the event's type.
func envelope() *jsonschema.Schema {
	s := &jsonschema.Schema{
		Version: jsonschema.Version,
		Title:   "hookbus CloudEvent",
		Description: "A hookbus event as a CloudEvent 1.0 in the structured JSON format: the attributes and hookbus' extensions, " +
			"and data, the stage's payload (payloads/<stage>.schema.json). On the bus an event travels in binary mode " +
			"(event-headers.schema.json: the same attributes as ce-* headers, the data as the body).",
		Type:       "object",
		Properties: jsonschema.NewProperties(),
	}
	setAll(s, attrs)
	s.Properties.Set("data", &jsonschema.Schema{Description: "The stage's payload (absent when dataref is set and the data was not fetched)."})
	s.DependentRequired = parentsTogether("")
	// Data or a claim check: an event without data names where it is.
	s.AllOf = append(s.AllOf, &jsonschema.Schema{
		If:   &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{events.ExtDataRef}}},
		Then: &jsonschema.Schema{Required: []string{"data"}},
	})
	for _, st := range events.Stages() {
		p := jsonschema.NewProperties()
		p.Set("type", &jsonschema.Schema{Const: st.Type()})
		then := jsonschema.NewProperties()
		then.Set("data", &jsonschema.Schema{Ref: PayloadFile(st)})
		s.AllOf = append(s.AllOf, &jsonschema.Schema{
			If:   &jsonschema.Schema{Properties: p, Required: []string{"type"}},
			Then: &jsonschema.Schema{Properties: then},
		})
	}
	return s
}

// headerValue is an attribute's schema as a header value: a string,
// percent-encoded as the CloudEvents NATS binding requires.
func headerValue(a attr) *jsonschema.Schema {
	v := a.value()
	v.Description = a.doc
	switch {
	case a.name == events.ExtStep:
		v = &jsonschema.Schema{Type: "string", Pattern: `^[0-9]{1,10}$`, Description: a.doc}
	case v.Format == "date-time":
		v.Format = "" // RFC 3339: the same text, but a header is not JSON
		v.Pattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`
	}
	return v
}

// headers is the schema of the headers of an event message: the
// attributes as ce-* headers, content-type, and extra.
func headers(title, description string, extra ...attr) *jsonschema.Schema {
	s := &jsonschema.Schema{
		Version: jsonschema.Version, Title: title, Description: description,
		Type: "object", Properties: jsonschema.NewProperties(),
	}
	for _, a := range attrs {
		if a.name == "datacontenttype" {
			continue // the content-type header, below
		}
		name := events.HeaderPrefix + a.name
		s.Properties.Set(name, headerValue(a))
		if a.required {
			s.Required = append(s.Required, name)
		}
	}
	s.Properties.Set(events.HeaderContentType, &jsonschema.Schema{Type: "string", Const: events.ContentTypeJSON, Description: "The data's content type."})
	s.Required = append(s.Required, events.HeaderContentType)
	setAll(s, extra)
	s.DependentRequired = parentsTogether(events.HeaderPrefix)
	return s
}

// setAll adds each of as to s's properties, with its doc, and to s's
// required ones when it is required.
func setAll(s *jsonschema.Schema, as []attr) {
	for _, a := range as {
		v := a.value()
		v.Description = a.doc
		s.Properties.Set(a.name, v)
		if a.required {
			s.Required = append(s.Required, a.name)
		}
	}
}

// parentsTogether is the dependentRequired of the parent extensions, each
// requiring the others, their names after prefix.
func parentsTogether(prefix string) map[string][]string {
	m := map[string][]string{}
	for _, p := range parents {
		for _, q := range parents {
			if p != q {
				m[prefix+p] = append(m[prefix+p], prefix+q)
			}
		}
	}
	return m
}

const headerNote = " Header names are matched without regard to case; values are percent-encoded (bytes outside printable ASCII, space, '\"' and '%')."

// eventHeaders is the schema of a stored event's headers.
func eventHeaders() *jsonschema.Schema {
	return headers("hookbus event headers",
		"The NATS headers of a hookbus event in CloudEvents binary content mode, as published on "+
			"<prefix>.evt.<agent>.<session>.<stage>: the attributes of cloudevent.schema.json as ce-* headers; the body is "+
			"the stage's payload (payloads/<stage>.schema.json), or empty when ce-dataref is set."+headerNote,
		attr{events.HeaderMsgID, true, pattern(ulid), "JetStream's de-duplication id: the event's id, so a retried publish is stored once."})
}

// requestHeaders is the schema of an interception request's headers.
func requestHeaders() *jsonschema.Schema {
	return headers("hookbus interception request headers",
		"The NATS headers of an interception request on <prefix>.hook.<stage>.<plugin>: the stage's event as it will be "+
			"stored (event-headers.schema.json, without "+events.HeaderMsgID+"; ce-id is the request's own, ce-seq the seq the "+
			"event gets when every interceptor answers), plus the deadline. The body is the payload as the earlier interceptors "+
			"of the chain left it (payloads/<stage>.schema.json), or empty when ce-dataref is set. The reply is a decision "+
			"(decision.schema.json; an empty body allows) or a micro error (headers Nats-Service-Error-Code: 400, 500 or 504, "+
			"and Nats-Service-Error)."+headerNote,
		attr{remote.HeaderDeadline, true, pattern(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$`),
			"When the loop stops waiting for the reply: RFC 3339 with nanoseconds, UTC. Informational when " + remote.HeaderTimeoutMs + " is present."},
		attr{remote.HeaderTimeoutMs, true, pattern(`^[0-9]+$`),
			"The budget left when the request was sent, in milliseconds, rounded up: answer within it, measured from the request's arrival."},
		attr{remote.HeaderTraceparent, false, pattern(traceparentPattern),
			"W3C trace context of this interceptor call (the request's ce-traceparent is its parent)."})
}
