package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/loop"
)

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("run", stderr)
	conn := cli.ConnFlags{Embeds: true}
	conn.Register(fs)
	var af agentFlags
	af.register(fs)
	agent := fs.String("agent", "demo", "agent id")
	session := fs.String("session", "", "session id (default: a new one); the same id continues the conversation")
	trace := fs.Bool("trace", false, "print every event on stderr as it is published")
	verbose := fs.Bool("v", false, "log debug output on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: loop run [flags] PROMPT\n\nRuns one agent run and prints its answer on stdout, the run and session ids on stderr.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return exitUsage, err
	}
	p, err := prompt(fs)
	if err != nil {
		return exitUsage, err
	}
	if *session == "" {
		*session = events.NewID()
	}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: *agent, SessionID: *session, Prompt: p}
	// Bad ids are refused before anything is started or written.
	if err := req.Validate(); err != nil {
		return exitUsage, fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	log := logger(*verbose, stderr)
	c, err := conn.Open(ctx, "hookbus-loop", log, cli.Provision)
	if err != nil {
		return exitFailure, err
	}
	defer c.Close()
	var em loop.Emitter = c.Bus
	if *trace {
		em = &tracer{Emitter: c.Bus, w: stderr}
	}
	hooks, stopHooks, err := syncHooks(ctx, c.Bus, log)
	if err != nil {
		return exitFailure, err
	}
	defer stopHooks()
	eng, err := af.engine(em, c.Bus, hooks, log)
	if err != nil {
		return exitFailure, err
	}
	res, err := eng.Run(ctx, req)
	if res != nil {
		fmt.Fprintf(stderr, "run %s session %s agent %s: %s", res.RunID, res.SessionID, res.AgentID, res.Reason)
		if res.Detail != "" {
			fmt.Fprintf(stderr, " (%s)", res.Detail)
		}
		fmt.Fprintf(stderr, ", %d steps, %d events\n", res.Steps, res.Events)
	}
	if err != nil {
		return exitFailure, err
	}
	if res.Answer != "" {
		fmt.Fprintln(stdout, res.Answer)
	}
	if res.Reason != events.ReasonDone {
		return exitNoAnswer, nil
	}
	return exitOK, nil
}

// tracer prints every event as it is appended.
type tracer struct {
	loop.Emitter
	mu sync.Mutex
	w  io.Writer
}

func (t *tracer) print(e *events.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = cli.PrintTimeline(t.w, e)
}

func (t *tracer) Append(ctx context.Context, e *events.Event, claim uint64) error {
	t.print(e)
	return t.Emitter.Append(ctx, e, claim)
}

func (t *tracer) AppendSync(ctx context.Context, e *events.Event, claim uint64) error {
	t.print(e)
	return t.Emitter.AppendSync(ctx, e, claim)
}

func (t *tracer) Claim(ctx context.Context, e *events.Event, last uint64) (uint64, error) {
	t.print(e)
	return t.Emitter.Claim(ctx, e, last)
}

func (t *tracer) Reclaim(ctx context.Context, e *events.Event, last, seen uint64) (uint64, error) {
	t.print(e)
	return t.Emitter.Reclaim(ctx, e, last, seen)
}
