package policytest

import (
	"context"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/policy"
)

// Config configures Run.
type Config struct {
	// Policies are the policies tested (a file's documents, policy.Parse).
	Policies []*policy.Policy
	// Filter selects the events read (since, an agent, a session); Run
	// sets its stages (Test.Stages).
	Filter bus.Filter
	// Agents and Harnesses, when set, are globs of the agents and
	// harnesses whose calls are tested (Agents, Harnesses).
	Agents, Harnesses string
	// Progress, when set, is given the report so far about once a second
	// while the events are read.
	Progress func(*Report)
}

// Run tests cfg.Policies on the recorded events the filter selects. It
// returns New's errors and the replay's.
func Run(ctx context.Context, b *bus.Bus, cfg Config) (*Report, error) {
	opts := []Option{Since(cfg.Filter.Since)}
	if cfg.Agents != "" {
		opts = append(opts, Agents(cfg.Agents))
	}
	if cfg.Harnesses != "" {
		opts = append(opts, Harnesses(cfg.Harnesses))
	}
	t, err := New(cfg.Policies, opts...)
	if err != nil {
		return nil, err
	}
	f := cfg.Filter
	f.Stages = t.Stages()
	last := time.Now()
	if _, err := b.Replay(ctx, f, func(e *events.Event) error {
		if cfg.Progress != nil && time.Since(last) >= time.Second {
			last = time.Now()
			cfg.Progress(t.Report())
		}
		return t.Add(ctx, e)
	}); err != nil {
		return nil, err
	}
	return t.Report(), nil
}
