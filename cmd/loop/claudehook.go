package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/internal/cli"
)

// maxHookInput bounds the hook input loop claude-hook reads from stdin
// (a tool_response may hold a whole file).
const maxHookInput = 64 << 20

// bridgeFlags are the flags loop claude-hook and loop gateway share.
type bridgeFlags struct {
	conn    cli.ConnFlags
	agent   string
	policy  string
	timeout time.Duration
	approve bool
	verbose bool
}

func (f *bridgeFlags) register(fs *flag.FlagSet) {
	f.conn.Register(fs)
	fs.StringVar(&f.agent, "agent", bridge.DefaultAgent, "the agent id Claude Code's sessions are recorded under")
	fs.StringVar(&f.policy, "policy", string(interceptors.PolicyIgnore), "when NATS is away or slow: ignore (the event proceeds, Claude Code shows a warning) or fail (tool calls and prompts are blocked)")
	fs.DurationVar(&f.timeout, "timeout", bridge.DefaultTimeout, "the most one event may take, answer included: keep it under the hook's timeout in Claude Code's settings")
	fs.BoolVar(&f.approve, "approve-modified", false, "answer a tool call the interceptors rewrote with permissionDecision allow (else Claude Code's own permission rules still apply to it)")
	fs.BoolVar(&f.verbose, "v", false, cli.VerboseHelp)
}

// check refuses what the flags cannot mean.
func (f *bridgeFlags) check() error {
	if err := events.ValidateID("agent", f.agent); err != nil {
		return fmt.Errorf("%w: --agent: %v", cli.ErrUsage, err)
	}
	switch interceptors.Policy(f.policy) {
	case interceptors.PolicyIgnore, interceptors.PolicyFail:
	default:
		return fmt.Errorf("%w: --policy %q: give ignore or fail", cli.ErrUsage, f.policy)
	}
	if f.timeout <= 0 {
		return fmt.Errorf("%w: --timeout %s: give a positive duration", cli.ErrUsage, f.timeout)
	}
	return nil
}

// config is the bridge's configuration on store and hooks.
func (f *bridgeFlags) config(store bridge.Store, hooks bridge.Hooks, log *slog.Logger) bridge.Config {
	return bridge.Config{Store: store, Hooks: hooks, Agent: f.agent, Policy: interceptors.Policy(f.policy),
		Timeout: f.timeout, Answer: claudecode.AnswerOptions{ApproveModified: f.approve}, Logger: log}
}

// cmdClaudeHook is loop claude-hook: one Claude Code hook event, read on
// stdin, recorded and decided on the bus, answered on stdout.
func cmdClaudeHook(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("claude-hook", stderr)
	var f bridgeFlags
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: loop claude-hook [flags]

A Claude Code command hook: configure it for every event (matcher "*") in
.claude/settings.json. It reads Claude Code's hook input on stdin, records it
as the session's hookbus event (agent --agent, session Claude Code's
session_id), runs the registry's interceptors for its stage, and answers on
stdout in Claude Code's output format. It answers within --timeout whatever
happens: when NATS is away or slow, by --policy. README.md, "Claude Code on
the bus", has the settings.json snippet.

Flags:`)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return exitUsage, err
	}
	if err := cli.NoArgs(fs); err != nil {
		return exitUsage, err
	}
	if err := f.check(); err != nil {
		return exitUsage, err
	}
	log := cli.Logger(f.verbose, stderr)
	raw, err := io.ReadAll(io.LimitReader(stdin, maxHookInput+1))
	if err == nil && len(raw) > maxHookInput {
		err = fmt.Errorf("hook input over %d bytes", maxHookInput)
	}
	var in *claudecode.Input
	if err == nil {
		in, err = claudecode.ParseInput(raw)
	}
	if err != nil {
		return badInput(stderr, f.policy, err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	type result struct {
		out *claudecode.Output
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := f.handle(ctx, in, log)
		done <- result{out, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		r.err = fmt.Errorf("%w: no answer from hookbus within %s", bridge.ErrUnrecorded, f.timeout)
		r.out = bridge.Outage(in, interceptors.Policy(f.policy), r.err)
	}
	if errors.Is(r.err, claudecode.ErrBadInput) {
		return badInput(stderr, f.policy, r.err)
	}
	if r.err != nil {
		fmt.Fprintf(stderr, "loop claude-hook: %v\n", r.err)
	}
	fmt.Fprintf(stdout, "%s\n", r.out.JSON())
	return exitOK, nil
}

// handle connects, follows the registry and handles one event. An error
// before the bridge runs (the connection) gets the outage policy's answer.
func (f *bridgeFlags) handle(ctx context.Context, in *claudecode.Input, log *slog.Logger) (*claudecode.Output, error) {
	c, err := f.conn.Open(ctx, "hookbus-claude-hook", log, cli.ReadOnly)
	if err != nil {
		err = fmt.Errorf("%w: %w", bridge.ErrUnrecorded, err)
		return bridge.Outage(in, interceptors.Policy(f.policy), err), err
	}
	defer c.Close()
	hooks, stop, err := syncHooks(ctx, c.Bus, log)
	if err != nil {
		err = fmt.Errorf("%w: %w", bridge.ErrUnrecorded, err)
		return bridge.Outage(in, interceptors.Policy(f.policy), err), err
	}
	defer stop()
	br, err := bridge.New(f.config(c.Bus, hooks, log))
	if err != nil {
		return nil, err
	}
	return br.Handle(ctx, in)
}

// badInput reports a hook input that cannot be read: under policy ignore
// Claude Code's non-blocking error (exit 1, the action proceeds), under
// fail a block (exit 2, the message as the reason).
func badInput(stderr io.Writer, policy string, err error) (int, error) {
	fmt.Fprintf(stderr, "loop claude-hook: %v\n", err)
	if interceptors.Policy(policy) == interceptors.PolicyFail {
		return exitUsage, nil
	}
	return exitFailure, nil
}
