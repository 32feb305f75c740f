package backtest

import (
	"context"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Config configures Run.
type Config struct {
	// Registration is the candidate: a remote interceptor (Plugin) serving
	// Stage over NATS, called with Timeout on the events its Tools, Kinds
	// and Agents match. remote.Register validates it.
	Registration interceptors.Registration
	// Filter selects the events read (agent, session, since, ...); Run
	// sets its stages (Backtest.Stages).
	Filter bus.Filter
	// Progress, when set, is given the report so far about once a second
	// while the events are read.
	Progress func(*Report)
}

// Run backtests cfg.Registration's plugin on the recorded events the
// filter selects and the registration matches: each is sent to the plugin as the loop calls it (a
// request to <prefix>.hook.<stage>.<plugin>), and the answers are compared
// with what was recorded. It returns remote.Register's error for a bad
// registration (wrapping interceptors.ErrInvalidRegistration or
// events.ErrInvalidID), and the replay's.
func Run(ctx context.Context, b *bus.Bus, cfg Config) (*Report, error) {
	reg := cfg.Registration
	chain := interceptors.NewChain(interceptors.WithTrust(interceptors.NewGrants(reg.Plugin)))
	if _, err := remote.Register(b, chain, reg); err != nil {
		return nil, err
	}
	bt := New(reg.Stage, reg.Plugin, chain, Matching(reg))
	f := cfg.Filter
	f.Stages = bt.Stages()
	last := time.Now()
	_, err := b.Replay(ctx, f, func(e *events.Event) error {
		if cfg.Progress != nil && time.Since(last) >= time.Second {
			last = time.Now()
			cfg.Progress(bt.Report())
		}
		return bt.Add(ctx, e)
	})
	if err != nil {
		return nil, err
	}
	return bt.Report(), nil
}
