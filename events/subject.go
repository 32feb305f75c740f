package events

import (
	"cmp"
	"fmt"
	"strings"
)

// DefaultPrefix is the subject prefix used when none is configured.
const DefaultPrefix = "hookbus"

// Subjects builds and parses hookbus subjects under one prefix:
//
//	<prefix>.evt.<agent>.<session>.<stage>   events (stage is one or two tokens)
//	<prefix>.evt.<agent>.<session>.approval.resolved.<writer>
//	                                         a person's answer, on its writer's subject
//	<prefix>.hook.<stage>.<plugin>           interception requests
//	<prefix>.run.<agent>                     run requests (work queue)
//	<prefix>.run.<agent>.<digest>            run requests pinned to a definition
//	<prefix>.wake.<agent>.<run>              scheduled wake-ups of waiting runs
//	<prefix>.wake.<agent>.<run>.due          the wake-ups when due
//	<prefix>.dlq.<consumer>                  dead letters of an observer
//	<prefix>.checkpoint                      signed checkpoints of the events stream
//	<prefix>.witness.<name>.<call>           a witness' calls (add-checkpoint, checkpoint)
//
// The zero value uses DefaultPrefix.
type Subjects struct {
	Prefix string
}

// NewSubjects returns Subjects for prefix ("" means DefaultPrefix). The prefix
// may hold several tokens ("acme.hookbus") but no wildcards or whitespace.
func NewSubjects(prefix string) (Subjects, error) {
	if prefix == "" {
		return Subjects{Prefix: DefaultPrefix}, nil
	}
	for _, tok := range strings.Split(prefix, ".") {
		if err := ValidateID("prefix", tok); err != nil {
			return Subjects{}, fmt.Errorf("subject prefix %q: %w", prefix, err)
		}
	}
	return Subjects{Prefix: prefix}, nil
}

func (s Subjects) prefix() string { return cmp.Or(s.Prefix, DefaultPrefix) }

// Event returns the subject of a stage's event for one agent and session.
func (s Subjects) Event(agent, session string, stage Stage) (string, error) {
	if err := ValidateID("agent", agent); err != nil {
		return "", err
	}
	if err := ValidateID("session", session); err != nil {
		return "", err
	}
	if !stage.Valid() {
		return "", fmt.Errorf("%w: %q", ErrUnknownStage, string(stage))
	}
	return s.prefix() + ".evt." + agent + "." + session + "." + string(stage), nil
}

// EventFilter returns a subject filter for events; an empty agent or session
// matches any, an empty stage matches every stage.
func (s Subjects) EventFilter(agent, session string, stage Stage) (string, error) {
	a, se := "*", "*"
	if agent != "" {
		if err := ValidateID("agent", agent); err != nil {
			return "", err
		}
		a = agent
	}
	if session != "" {
		if err := ValidateID("session", session); err != nil {
			return "", err
		}
		se = session
	}
	st := ">"
	if stage != "" {
		if !stage.Valid() {
			return "", fmt.Errorf("%w: %q", ErrUnknownStage, string(stage))
		}
		st = string(stage)
	}
	return s.prefix() + ".evt." + a + "." + se + "." + st, nil
}

// EventFilters returns the subject filters of a stage's events, as
// EventFilter does, with one more for approval.resolved (or every stage):
// the answers people recorded on their writers' subjects
// (ApprovalResolved), whose subjects have one more token. An empty stage
// needs no second filter: "<prefix>.evt.<agent>.<session>.>" holds them.
func (s Subjects) EventFilters(agent, session string, stage Stage) ([]string, error) {
	f, err := s.EventFilter(agent, session, stage)
	if err != nil {
		return nil, err
	}
	if stage == StageApprovalResolved {
		return []string{f, f + ".*"}, nil
	}
	return []string{f}, nil
}

// ApprovalResolved returns the subject a person's answer to an approval is
// recorded on: "<prefix>.evt.<agent>.<session>.approval.resolved.<writer>",
// writer being the NATS user that writes it, encoded by WriterToken. Subject
// permissions let each user publish only its own (deploy/nats), so the
// subject says who wrote the record. An expiry (written by a worker) is on
// the plain subject, Event's.
func (s Subjects) ApprovalResolved(agent, session, writer string) (string, error) {
	subj, err := s.Event(agent, session, StageApprovalResolved)
	if err != nil {
		return "", err
	}
	tok, err := WriterToken(writer)
	if err != nil {
		return "", err
	}
	return subj + "." + tok, nil
}

// AllEvents is the filter of every event subject: "<prefix>.evt.>".
func (s Subjects) AllEvents() string { return s.prefix() + ".evt.>" }

// ParseEvent splits an event subject into agent, session and stage. The
// subject of a person's answer (ApprovalResolved) parses too, as stage
// approval.resolved; ParseEventWriter also returns its writer.
func (s Subjects) ParseEvent(subject string) (agent, session string, stage Stage, err error) {
	agent, session, stage, _, err = s.ParseEventWriter(subject)
	return agent, session, stage, err
}

// ParseEventWriter is ParseEvent, also returning the writer of a person's
// answer: the NATS user its subject names (ApprovalResolved), "" for any
// other event.
func (s Subjects) ParseEventWriter(subject string) (agent, session string, stage Stage, writer string, err error) {
	rest, ok := strings.CutPrefix(subject, s.prefix()+".evt.")
	if !ok {
		return "", "", "", "", fmt.Errorf("%w: %q is not under %s.evt", ErrInvalidSubject, subject, s.prefix())
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) != 3 {
		return "", "", "", "", fmt.Errorf("%w: %q lacks agent, session or stage", ErrInvalidSubject, subject)
	}
	if tok, ok := strings.CutPrefix(parts[2], string(StageApprovalResolved)+"."); ok {
		if writer, err = ParseWriterToken(tok); err != nil {
			return "", "", "", "", fmt.Errorf("%w: %q: %v", ErrInvalidSubject, subject, err)
		}
		parts[2] = string(StageApprovalResolved)
	}
	stage, err = ParseStage(parts[2])
	if err != nil {
		return "", "", "", "", fmt.Errorf("%w: %q: %v", ErrInvalidSubject, subject, err)
	}
	if err := ValidateID("agent", parts[0]); err != nil {
		return "", "", "", "", err
	}
	if err := ValidateID("session", parts[1]); err != nil {
		return "", "", "", "", err
	}
	return parts[0], parts[1], stage, writer, nil
}

// Hook returns the interception subject of a plugin on a stage.
func (s Subjects) Hook(stage Stage, plugin string) (string, error) {
	if !stage.Valid() {
		return "", fmt.Errorf("%w: %q", ErrUnknownStage, string(stage))
	}
	if err := ValidateID("plugin", plugin); err != nil {
		return "", err
	}
	return s.prefix() + ".hook." + string(stage) + "." + plugin, nil
}

// ParseHook splits an interception subject into stage and plugin.
func (s Subjects) ParseHook(subject string) (Stage, string, error) {
	rest, ok := strings.CutPrefix(subject, s.prefix()+".hook.")
	if !ok {
		return "", "", fmt.Errorf("%w: %q is not under %s.hook", ErrInvalidSubject, subject, s.prefix())
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return "", "", fmt.Errorf("%w: %q lacks stage or plugin", ErrInvalidSubject, subject)
	}
	stage, err := ParseStage(rest[:i])
	if err != nil {
		return "", "", fmt.Errorf("%w: %q: %v", ErrInvalidSubject, subject, err)
	}
	if err := ValidateID("plugin", rest[i+1:]); err != nil {
		return "", "", err
	}
	return stage, rest[i+1:], nil
}

// Run returns the run-request subject of an agent.
func (s Subjects) Run(agent string) (string, error) {
	if err := ValidateID("agent", agent); err != nil {
		return "", err
	}
	return s.prefix() + ".run." + agent, nil
}

// RunPinned returns the subject of an agent's run requests that must run
// on the definition with digest: "<prefix>.run.<agent>.<digest>".
func (s Subjects) RunPinned(agent, digest string) (string, error) {
	if err := ValidateID("agent", agent); err != nil {
		return "", err
	}
	if err := ValidateDigest(digest); err != nil {
		return "", err
	}
	return s.prefix() + ".run." + agent + "." + digest, nil
}

// RunsPinned is the filter of an agent's pinned run requests, whatever
// their definition: "<prefix>.run.<agent>.*".
func (s Subjects) RunsPinned(agent string) (string, error) {
	if err := ValidateID("agent", agent); err != nil {
		return "", err
	}
	return s.prefix() + ".run." + agent + ".*", nil
}

// AllRuns is the filter of every run-request subject: "<prefix>.run.>".
func (s Subjects) AllRuns() string { return s.prefix() + ".run.>" }

// ParseRun splits a run-request subject into its agent and the digest it
// is pinned to ("" for an unpinned request).
func (s Subjects) ParseRun(subject string) (agent, digest string, err error) {
	rest, ok := strings.CutPrefix(subject, s.prefix()+".run.")
	if !ok {
		return "", "", fmt.Errorf("%w: %q is not under %s.run", ErrInvalidSubject, subject, s.prefix())
	}
	agent, digest, _ = strings.Cut(rest, ".")
	if err := ValidateID("agent", agent); err != nil {
		return "", "", err
	}
	if digest != "" {
		if err := ValidateDigest(digest); err != nil {
			return "", "", fmt.Errorf("%w: %q: %v", ErrInvalidSubject, subject, err)
		}
	}
	return agent, digest, nil
}

// Wake returns the subject of a waiting run's scheduled wake-up:
// "<prefix>.wake.<agent>.<run>".
func (s Subjects) Wake(agent, run string) (string, error) {
	if err := ValidateID("agent", agent); err != nil {
		return "", err
	}
	if err := ValidateID("run", run); err != nil {
		return "", err
	}
	return s.prefix() + ".wake." + agent + "." + run, nil
}

// WakeDue returns the subject a waiting run's wake-up is delivered on when
// it is due: "<prefix>.wake.<agent>.<run>.due" (the target of the
// schedule on Wake's subject).
func (s Subjects) WakeDue(agent, run string) (string, error) {
	subj, err := s.Wake(agent, run)
	if err != nil {
		return "", err
	}
	return subj + ".due", nil
}

// WakeDueFilter returns the filter of an agent's due wake-ups; an empty
// agent matches any.
func (s Subjects) WakeDueFilter(agent string) (string, error) {
	a := "*"
	if agent != "" {
		if err := ValidateID("agent", agent); err != nil {
			return "", err
		}
		a = agent
	}
	return s.prefix() + ".wake." + a + ".*.due", nil
}

// AllWakes is the filter of every wake-up subject (the schedules and the
// due wake-ups): the subjects of the wakes stream.
func (s Subjects) AllWakes() string { return s.prefix() + ".wake.>" }

// DeadLetter returns the subject an observer's undeliverable events go to.
func (s Subjects) DeadLetter(consumer string) (string, error) {
	if err := ValidateID("consumer", consumer); err != nil {
		return "", err
	}
	return s.prefix() + ".dlq." + consumer, nil
}

// AllDeadLetters is the filter of every dead-letter subject.
func (s Subjects) AllDeadLetters() string { return s.prefix() + ".dlq.>" }

// Checkpoint is the subject of the signed checkpoints of the events
// stream: "<prefix>.checkpoint" (the checkpoints stream's only subject).
func (s Subjects) Checkpoint() string { return s.prefix() + ".checkpoint" }

// Witness returns the subject of one call of a witness: "<prefix>.witness.<name>.<call>",
// call being "add-checkpoint" or "checkpoint".
func (s Subjects) Witness(name, call string) (string, error) {
	if err := ValidateID("witness", name); err != nil {
		return "", err
	}
	if err := ValidateID("witness call", call); err != nil {
		return "", err
	}
	return s.prefix() + ".witness." + name + "." + call, nil
}
