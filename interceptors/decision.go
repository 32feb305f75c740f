package interceptors

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hookbus/hookbus/events"
)

// Kind is what an interceptor decided. Its string is the "decision" field of
// the wire reply.
type Kind string

// The decisions. Which ones a stage accepts is given by StageKinds.
const (
	// Allow lets the event go on unchanged (on tool.after it may add
	// Context for the model).
	Allow Kind = "allow"
	// Modify replaces the payload (Data) or patches it (Patch, RFC 6902).
	Modify Kind = "modify"
	// Deny refuses the event; Reason says why (on tool.before it goes back
	// to the model as the tool result).
	Deny Kind = "deny"
	// Mock gives the tool result in Data ({"content":"...","is_error":false});
	// the tool does not run. tool.before only.
	Mock Kind = "mock"
	// Stop ends the run.
	Stop Kind = "stop"
	// Ask pauses the run for a human to approve the tool call. tool.before
	// only.
	Ask Kind = "ask"
	// Continue forces another step with the message in Context (or Reason).
	// stop only.
	Continue Kind = "continue"
)

// Decision is an interceptor's answer. Its JSON form is the reply of the
// wire protocol, which services in any language send:
//
//	{"decision":"modify","patch":[{"op":"replace","path":"/call/arguments/cmd","value":"ls"}],
//	 "reason":"...","context":"...","warnings":["..."],"annotations":{"k":"v"}}
//
// A nil *Decision means allow, and so does an empty reply body.
type Decision struct {
	// Kind is the decision: allow, modify, deny, mock, stop, ask or continue
	// (what the stage accepts: StageKinds).
	Kind Kind `json:"decision"`
	// Data is the replacement payload of a modify, or the tool result of a
	// mock ({"content":"...","is_error":false}). JSON null counts as absent.
	Data json.RawMessage `json:"data,omitempty"`
	// Patch is an RFC 6902 patch of the payload (modify only). A modify
	// carries Data or Patch, not both; an empty, non-nil patch is a modify
	// that changes nothing.
	Patch []PatchOp `json:"patch,omitzero"`
	// Reason says why: the deny reason, the stop reason, the question of an
	// ask.
	Reason string `json:"reason,omitempty"`
	// Context is text for the model: added after the tool result on
	// tool.after (with allow or modify), or the message of a continue.
	Context string `json:"context,omitempty"`
	// Warnings are recorded in hook.decided.
	Warnings []string `json:"warnings,omitempty"`
	// Annotations are recorded in hook.decided.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Policy says which policy decided and why, for a policy's decision
	// (package policy); it is recorded in hook.decided.
	Policy *events.PolicyHit `json:"policy,omitempty"`
}

// MockResult is the Data of a mock decision: the tool result given in place
// of running the tool. It has the JSON names of events.ToolResult.
type MockResult struct {
	// Content is the tool result the model reads.
	Content string `json:"content"`
	// IsError marks a result that reports a failure.
	IsError bool `json:"is_error,omitempty"`
}

// Replace returns a modify decision whose Data is v marshalled to JSON.
func Replace(v any) (*Decision, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("interceptors: replace: %w", err)
	}
	return &Decision{Kind: Modify, Data: b}, nil
}

// Mocked returns a mock decision with the given tool result.
func Mocked(content string, isError bool) *Decision {
	b, _ := json.Marshal(MockResult{Content: content, IsError: isError}) // cannot fail
	return &Decision{Kind: Mock, Data: b}
}

// ParseDecision reads a wire reply. An empty (or all-whitespace) body is
// allow. A body that is not a JSON object, names no or an unknown decision,
// or is inconsistent (data and patch both, data or patch where the decision
// carries none, a malformed patch or mock result, a continue without a
// message) is an error wrapping ErrBadReply that says what is wrong.
// Whether the stage accepts the decision is checked by Decision.Validate.
func ParseDecision(body []byte) (*Decision, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return &Decision{Kind: Allow}, nil
	}
	var d Decision
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("%w: %v (body %.80q)", ErrBadReply, err, body)
	}
	if isNull(d.Data) {
		d.Data = nil
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	return &d, nil
}

// Validate checks that the decision is consistent (as ParseDecision does)
// and that stage accepts it (see StageKinds). Context is read only on
// tool.after (with allow or modify) and with continue; elsewhere it is an
// error. The error wraps ErrBadReply.
func (d *Decision) Validate(stage events.Stage) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.checkStage(stage)
}

func (d *Decision) checkStage(stage events.Stage) error {
	set := stage.Accepts()
	if set == 0 {
		return fmt.Errorf("%w: stage %s is observe-only and accepts no decision", ErrBadReply, stage)
	}
	if set&d.Kind.bit() == 0 {
		return fmt.Errorf("%w: stage %s does not accept %s (accepts %s)", ErrBadReply, stage, d.Kind, set)
	}
	if d.Context != "" && d.Kind != Continue && stage != events.StageToolAfter {
		return fmt.Errorf("%w: %s on %s carries context, which is read only on %s and with continue",
			ErrBadReply, d.Kind, stage, events.StageToolAfter)
	}
	return nil
}

// check is the stage-independent consistency check.
func (d *Decision) check() error {
	hasData := len(d.Data) > 0 && !isNull(d.Data)
	switch d.Kind {
	case "":
		return fmt.Errorf("%w: no decision (want one of %s)", ErrBadReply, events.AllDecisions)
	case Modify:
		switch {
		case hasData && d.Patch != nil:
			return fmt.Errorf("%w: modify carries both data and patch (send one)", ErrBadReply)
		case !hasData && d.Patch == nil:
			return fmt.Errorf("%w: modify carries neither data nor patch", ErrBadReply)
		case hasData && !json.Valid(d.Data):
			return fmt.Errorf("%w: modify data is not valid JSON", ErrBadReply)
		case hasData && firstByte(d.Data) != '{':
			return fmt.Errorf("%w: modify data is not a JSON object (a payload is one)", ErrBadReply)
		}
		return checkPatch(d.Patch)
	case Mock:
		if !hasData {
			return fmt.Errorf("%w: mock carries no tool result in data", ErrBadReply)
		}
		if d.Patch != nil {
			return fmt.Errorf("%w: mock carries a patch (only modify does)", ErrBadReply)
		}
		_, err := d.mockResult()
		return err
	case Continue:
		if d.Context == "" && d.Reason == "" {
			return fmt.Errorf("%w: continue carries no message in context or reason", ErrBadReply)
		}
	case Allow, Deny, Stop, Ask:
	default:
		return fmt.Errorf("%w: unknown decision %.40q (want one of %s)", ErrBadReply, string(d.Kind), events.AllDecisions)
	}
	if hasData {
		return fmt.Errorf("%w: %s carries data (only modify and mock do)", ErrBadReply, d.Kind)
	}
	if d.Patch != nil {
		return fmt.Errorf("%w: %s carries a patch (only modify does)", ErrBadReply, d.Kind)
	}
	return nil
}

func (d *Decision) mockResult() (MockResult, error) {
	var m MockResult
	if firstByte(d.Data) != '{' {
		return m, fmt.Errorf("%w: mock data is not a JSON object {\"content\":...,\"is_error\":...}", ErrBadReply)
	}
	if err := json.Unmarshal(d.Data, &m); err != nil {
		return m, fmt.Errorf("%w: mock data is not a tool result: %v", ErrBadReply, err)
	}
	return m, nil
}

// bit is the decision in events' set (none for an unknown kind).
func (k Kind) bit() events.Decisions { return events.DecisionNamed(string(k)) }

// String returns the wire name of the decision.
func (k Kind) String() string { return string(k) }

// Ends reports whether the decision ends the mutating chain: deny, mock,
// stop, ask and continue do; allow and modify let the next interceptor run.
func (k Kind) Ends() bool {
	return k.bit()&(events.DecisionDeny|events.DecisionMock|events.DecisionStop|events.DecisionAsk|events.DecisionContinue) != 0
}

// kinds returns the decisions of s as Kinds, allow first.
func kinds(s events.Decisions) []Kind {
	names := s.Names()
	out := make([]Kind, len(names))
	for i, n := range names {
		out[i] = Kind(n)
	}
	return out
}

// StageKinds returns the decisions stage accepts, allow first; it is empty
// for an observe-only stage. It reads events' stage table
// (events.Stage.Accepts):
//
//	intake, subagent.before              allow modify deny
//	step.started                         allow stop
//	context.assembled, model.responded   allow modify deny stop
//	tool.before                          allow modify deny mock stop ask
//	tool.after                           allow modify (both may add context)
//	stop                                 allow stop continue
func StageKinds(stage events.Stage) []Kind { return kinds(stage.Accepts()) }

func isNull(b json.RawMessage) bool {
	return string(bytes.TrimSpace(b)) == "null"
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}
