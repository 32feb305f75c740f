package events

import (
	"fmt"
	"strings"
)

// DefaultPrefix is the subject prefix used when none is configured.
const DefaultPrefix = "hookbus"

// Subjects builds and parses hookbus subjects under one prefix:
//
//	<prefix>.evt.<agent>.<session>.<stage>   events (stage is one or two tokens)
//	<prefix>.hook.<stage>.<plugin>           interception requests
//	<prefix>.run.<agent>                     run requests (work queue)
//	<prefix>.run.<agent>.<digest>            run requests pinned to a definition
//	<prefix>.approval.<agent>                answers to approvals (work queue)
//	<prefix>.wake.<agent>.<run>              scheduled wake-ups of waiting runs
//	<prefix>.dlq.<consumer>                  dead letters of an observer
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

func (s Subjects) prefix() string {
	if s.Prefix == "" {
		return DefaultPrefix
	}
	return s.Prefix
}

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

// AllEvents is the filter of every event subject: "<prefix>.evt.>".
func (s Subjects) AllEvents() string { return s.prefix() + ".evt.>" }

// ParseEvent splits an event subject into agent, session and stage.
func (s Subjects) ParseEvent(subject string) (agent, session string, stage Stage, err error) {
	rest, ok := strings.CutPrefix(subject, s.prefix()+".evt.")
	if !ok {
		return "", "", "", fmt.Errorf("%w: %q is not under %s.evt", ErrInvalidSubject, subject, s.prefix())
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("%w: %q lacks agent, session or stage", ErrInvalidSubject, subject)
	}
	stage, err = ParseStage(parts[2])
	if err != nil {
		return "", "", "", fmt.Errorf("%w: %q: %v", ErrInvalidSubject, subject, err)
	}
	if err := ValidateID("agent", parts[0]); err != nil {
		return "", "", "", err
	}
	if err := ValidateID("session", parts[1]); err != nil {
		return "", "", "", err
	}
	return parts[0], parts[1], stage, nil
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

// Approval returns the subject answers to an agent's approvals are sent
// on: "<prefix>.approval.<agent>".
func (s Subjects) Approval(agent string) (string, error) {
	if err := ValidateID("agent", agent); err != nil {
		return "", err
	}
	return s.prefix() + ".approval." + agent, nil
}

// AllApprovals is the filter of every approval subject.
func (s Subjects) AllApprovals() string { return s.prefix() + ".approval.>" }

// ParseQueue splits a run-queue subject (run request, pinned or not, or
// approval answer) into its kind ("run" or "approval") and agent.
func (s Subjects) ParseQueue(subject string) (kind, agent string, err error) {
	if strings.HasPrefix(subject, s.prefix()+".run.") {
		agent, _, err := s.ParseRun(subject)
		if err != nil {
			return "", "", err
		}
		return "run", agent, nil
	}
	if rest, ok := strings.CutPrefix(subject, s.prefix()+".approval."); ok {
		if err := ValidateID("agent", rest); err != nil {
			return "", "", err
		}
		return "approval", rest, nil
	}
	return "", "", fmt.Errorf("%w: %q is not a run request or approval subject", ErrInvalidSubject, subject)
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

// AllWakes is the filter of every wake-up subject.
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
