package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// closeIdleFlags is --close-idle: how long a coding agent's session may be
// silent before its open run is closed in the record as idle.
type closeIdleFlags struct {
	idle time.Duration
}

func (f *closeIdleFlags) register(fs *pflag.FlagSet, def time.Duration, also string) {
	fs.DurationVar(&f.idle, "close-idle", def, "close the open run of a coding agent's session (Claude Code, Gemini CLI, Codex CLI) silent for longer than this, "+
		"recorded as run.completed with reason idle (0: never)"+also)
}

func (f *closeIdleFlags) check() error {
	if f.idle < 0 {
		return fmt.Errorf("%w: --close-idle %s: give a positive duration, or 0 to close no session", cli.ErrUsage, f.idle)
	}
	return nil
}

// start sweeps the bus' coding-agent sessions until ctx ends (nothing with
// --close-idle 0). Its failure is logged: the process goes on without it.
func (f *closeIdleFlags) start(ctx context.Context, c *cli.Conn, log *slog.Logger) {
	if f.idle == 0 {
		return
	}
	closer, err := idleCloser(c, f.idle, log)
	if err != nil {
		log.Error("idle sessions will not be closed", "err", err)
		return
	}
	go func() {
		if err := closer.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("idle sessions no longer closed", "err", err)
		}
	}()
}

// idleCloser sweeps the sessions of the three coding agents' default
// agent ids.
func idleCloser(c *cli.Conn, idle time.Duration, log *slog.Logger) (*bridge.IdleCloser, error) {
	closer := &bridge.IdleCloser{Bus: c.Bus, Idle: idle, Logger: log}
	for _, name := range harnessNames {
		h, err := harnessOf(name, false)
		if err != nil {
			return nil, err
		}
		br, err := bridge.New(bridge.Config{Store: c.Bus, Harness: h, Logger: log})
		if err != nil {
			return nil, err
		}
		closer.Bridges = append(closer.Bridges, br)
	}
	return closer, nil
}

const closeIdleLong = `Follows the coding agents' sessions on the bus (agents claude-code, gemini-cli and
codex-cli, as loop agent-hook records them) and closes the open run of a session silent
for longer than --close-idle: run.completed with reason idle, so that a CLI whose hooks
missed the session's end (killed, or a settings file without the end hook) does not
leave it running for ever. The end is appended on condition that the session's last
event is still the one read: any number of closers may run (loop server, loop gateway
and this command take the same flag), exactly one records each end, and a session
that speaks again is not closed. It needs credentials that may publish events (the
loop user of deploy/nats).`

// closeIdleCmd is loop close-idle: the sweeper alone.
func closeIdleCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("close-idle [flags]", "Close, as idle, coding-agent sessions silent for too long", closeIdleLong, func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a}
		conn.Register(fs)
		var f closeIdleFlags
		f.register(fs, time.Hour, "")
		return func(ctx context.Context, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if f.idle == 0 {
				return fmt.Errorf("%w: --close-idle 0 closes nothing: give the idle time", cli.ErrUsage)
			}
			log := a.Log.Logger(a.Err)
			c, err := conn.Open(ctx, "hookbus-close-idle", log, cli.ReadOnly)
			if err != nil {
				return err
			}
			defer c.Close()
			closer, err := idleCloser(c, f.idle, log)
			if err != nil {
				return err
			}
			a.Log.Say(a.Err, "loop close-idle: closing coding-agent sessions silent for %s; interrupt to stop", f.idle)
			if err := closer.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return c.Explain(err)
			}
			return nil
		}
	})
}
