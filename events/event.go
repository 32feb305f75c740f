package events

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ContentTypeJSON is the data content type of every hookbus event.
const ContentTypeJSON = "application/json"

// CloudEvent extension names carried by hookbus events.
const (
	ExtAgentID     = "agentid"
	ExtSessionID   = "sessionid"
	ExtRunID       = "runid"
	ExtStep        = "step"
	ExtSeq         = "seq"
	ExtTraceparent = "traceparent"
	ExtDataRef     = "dataref"
	// The lineage of a child run (a sub-agent's): the run, session and
	// agent that called it.
	ExtParentAgentID   = "parentagentid"
	ExtParentSessionID = "parentsessionid"
	ExtParentRunID     = "parentrunid"
	// The tamper evidence of a run (chain.go): the hash of the run's
	// previous event, and on the run's terminal event the signer's public
	// key and its signature of the event's hash.
	ExtPrevHash  = "prevhash"
	ExtSigner    = "signer"
	ExtSignature = "signature"
)

// SeqWidth is the number of digits of the zero-padded seq extension, so that
// string order equals numeric order.
const SeqWidth = 12

// Event is one hookbus event: a CloudEvent whose hookbus extensions are read
// out into fields. Data is the stage payload as JSON; it is empty when the
// payload was too large for a message and DataRef names where it is stored.
type Event struct {
	ID          string
	Stage       Stage
	Source      string
	Time        time.Time
	Subject     string // the CloudEvent subject: the tool name on tool stages
	AgentID     string
	SessionID   string
	RunID       string
	Step        int
	Seq         uint64
	Traceparent string
	DataRef     string
	// ParentAgentID, ParentSessionID and ParentRunID name the run that
	// called this event's run, for a child run (a sub-agent); empty
	// otherwise.
	ParentAgentID, ParentSessionID, ParentRunID string
	// PrevHash is the chain hash (ChainHash, lower-case hex) of the run's
	// previous event; empty on a run's first event. Signer and Signature
	// are set on a signed run's terminal event: the signer's public key
	// (an nkey) and its ed25519 signature of the event's ChainHash
	// (base64url, no padding).
	PrevHash, Signer, Signature string
	Data                        json.RawMessage
	// Stored is the event's stream sequence when it was read from the
	// events stream (0 otherwise). It is not part of the CloudEvent: it
	// says where the event is, not what it is.
	Stored uint64
	// Writer is, for an approval.resolved read from a writer's subject
	// (Subjects.ApprovalResolved), the NATS user that subject names: who
	// the server let write it. Like Stored, it is set by readers and is
	// not part of the CloudEvent.
	Writer string
}

// Meta is what New needs besides the stage and payload.
type Meta struct {
	Source      string
	AgentID     string
	SessionID   string
	RunID       string
	Step        int
	Seq         uint64
	Subject     string
	Traceparent string
	// The lineage of a child run (see Event).
	ParentAgentID, ParentSessionID, ParentRunID string
	// ID and Time default to a new ULID and the current time.
	ID   string
	Time time.Time
}

// New builds an event of stage with payload marshalled as its JSON data. It
// returns an error naming the first bad field (unknown stage, invalid ids,
// missing source) or a payload that does not marshal.
func New(stage Stage, m Meta, payload any) (*Event, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrPayload, stage, err)
	}
	e := &Event{
		ID: m.ID, Stage: stage, Source: m.Source, Time: m.Time, Subject: m.Subject,
		AgentID: m.AgentID, SessionID: m.SessionID, RunID: m.RunID, Step: m.Step, Seq: m.Seq,
		Traceparent: m.Traceparent, Data: data,
		ParentAgentID: m.ParentAgentID, ParentSessionID: m.ParentSessionID, ParentRunID: m.ParentRunID,
	}
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	// The data is what json.Marshal just wrote: valid JSON.
	if err := e.validateEnvelope(); err != nil {
		return nil, err
	}
	return e, nil
}

// MaxStep is the largest step: the step extension is a CloudEvents Integer
// (32-bit).
const MaxStep = math.MaxInt32

// Validate checks the event: a ULID id, a known stage, a source, valid
// agent, session and run ids, a time, a step from 0 to MaxStep, and JSON
// data (unless DataRef is set). Encode and Decode hold every event to it.
// The error wraps ErrMalformedEvent or ErrInvalidID.
func (e *Event) Validate() error {
	if err := e.validateEnvelope(); err != nil {
		return err
	}
	if e.DataRef == "" && !ValidJSON(e.Data) {
		return fmt.Errorf("%w: event %s data is not valid JSON", ErrMalformedEvent, e.ID)
	}
	return nil
}

// validateEnvelope is Validate without the data.
func (e *Event) validateEnvelope() error {
	if err := ValidateULID("event", e.ID); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedEvent, err)
	}
	if !e.Stage.Valid() {
		return fmt.Errorf("%w: unknown stage %q", ErrMalformedEvent, string(e.Stage))
	}
	if e.Source == "" {
		return fmt.Errorf("%w: event %s has no source", ErrMalformedEvent, e.ID)
	}
	if e.Time.IsZero() {
		return fmt.Errorf("%w: event %s has no time", ErrMalformedEvent, e.ID)
	}
	return e.validateRest()
}

// validateRest is validateEnvelope after the id, stage, source and time:
// the agent, session, run and parent ids and the step.
func (e *Event) validateRest() error {
	if err := ValidateID("agent", e.AgentID); err != nil {
		return fmt.Errorf("event %s: %w", e.ID, err)
	}
	if err := ValidateID("session", e.SessionID); err != nil {
		return fmt.Errorf("event %s: %w", e.ID, err)
	}
	if err := ValidateID("run", e.RunID); err != nil {
		return fmt.Errorf("event %s: %w", e.ID, err)
	}
	for _, id := range [...]struct{ kind, v string }{{"parent agent", e.ParentAgentID}, {"parent session", e.ParentSessionID}, {"parent run", e.ParentRunID}} {
		if id.v == "" {
			continue
		}
		if err := ValidateID(id.kind, id.v); err != nil {
			return fmt.Errorf("event %s: %w", e.ID, err)
		}
	}
	if (e.ParentAgentID == "") != (e.ParentRunID == "") || (e.ParentSessionID == "") != (e.ParentRunID == "") {
		return fmt.Errorf("%w: event %s names a parent run only in part (agent %q, session %q, run %q)", ErrMalformedEvent, e.ID, e.ParentAgentID, e.ParentSessionID, e.ParentRunID)
	}
	if e.Step < 0 {
		return fmt.Errorf("%w: event %s has negative step %d", ErrMalformedEvent, e.ID, e.Step)
	}
	if e.Step > MaxStep {
		return fmt.Errorf("%w: event %s step %d exceeds %d", ErrMalformedEvent, e.ID, e.Step, MaxStep)
	}
	return nil
}

// Type is the event's CloudEvent type ("hookbus.tool.before").
func (e *Event) Type() string { return e.Stage.Type() }

// SeqString is the zero-padded seq extension value.
func (e *Event) SeqString() string { return FormatSeq(e.Seq) }

// FormatSeq zero-pads a per-run sequence number to SeqWidth digits.
func FormatSeq(seq uint64) string {
	s := strconv.FormatUint(seq, 10)
	if len(s) >= SeqWidth {
		return s
	}
	b := make([]byte, SeqWidth)
	pad := SeqWidth - len(s)
	for i := 0; i < pad; i++ {
		b[i] = '0'
	}
	copy(b[pad:], s)
	return string(b)
}

// DecodeData unmarshals the event's data into v, with an error wrapping
// ErrPayload that names the event when it does not fit.
func (e *Event) DecodeData(v any) error {
	if e.DataRef != "" && len(e.Data) == 0 {
		return fmt.Errorf("%w: event %s data is stored at %q and was not fetched", ErrPayload, e.ID, e.DataRef)
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("%w: event %s (%s): %v", ErrPayload, e.ID, e.Stage, err)
	}
	return nil
}

// Payload decodes the data into a new value of the stage's payload type
// (a pointer, e.g. *ToolBefore).
func (e *Event) Payload() (any, error) {
	p, err := PayloadFor(e.Stage)
	if err != nil {
		return nil, err
	}
	if err := e.DecodeData(p); err != nil {
		return nil, err
	}
	return p, nil
}

// Clone returns a deep copy of the event.
func (e *Event) Clone() *Event {
	c := *e
	c.Data = append(json.RawMessage(nil), e.Data...)
	return &c
}
