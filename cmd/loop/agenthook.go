package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus/policies"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/cline"
	"github.com/hookbus/hookbus/hooks/codex"
	"github.com/hookbus/hookbus/hooks/copilot"
	"github.com/hookbus/hookbus/hooks/factory"
	"github.com/hookbus/hookbus/hooks/gemini"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/hooks/opencode"
	"github.com/hookbus/hookbus/hooks/qwen"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// maxHookInput bounds the hook input loop agent-hook reads from stdin
// (a tool_response may hold a whole file).
const maxHookInput = 64 << 20

// Harnesses are the coding agents loop agent-hook and loop gateway speak
// to, by --harness name.
var harnessNames = []string{claudecode.HarnessName, gemini.HarnessName, codex.HarnessName,
	copilot.HarnessName, qwen.HarnessName, factory.HarnessName, cline.HarnessName,
	opencode.OpenCode.Name(), opencode.Kilo.Name()}

// harnessOf returns the harness named name; approve is Claude Code's
// --approve-modified.
func harnessOf(name string, approve bool) (harness.Protocol, error) {
	switch name {
	case claudecode.HarnessName:
		return claudecode.Harness{Options: claudecode.AnswerOptions{ApproveModified: approve}}, nil
	case gemini.HarnessName:
		return gemini.Harness{}, nil
	case codex.HarnessName:
		return codex.Harness{}, nil
	case opencode.OpenCode.Name():
		return opencode.OpenCode, nil
	case opencode.Kilo.Name():
		return opencode.Kilo, nil
	case copilot.HarnessName:
		return copilot.Harness(), nil
	case qwen.HarnessName:
		return qwen.Harness(), nil
	case factory.HarnessName:
		return factory.Harness(), nil
	case cline.HarnessName:
		return cline.Harness{}, nil
	}
	return nil, fmt.Errorf("%w: --harness %q: give %s", cli.ErrUsage, name, strings.Join(harnessNames, ", "))
}

// bridgeFlags are the flags loop agent-hook, loop claude-hook and loop
// gateway share.
type bridgeFlags struct {
	conn    cli.ConnFlags
	fs      *pflag.FlagSet // the flags registered, for --config
	file    string
	agent   string
	policy  string
	timeout time.Duration
	approve bool
}

func (f *bridgeFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	f.conn.Register(fs)
	fs.StringVar(&f.agent, "agent", "", "the agent id the sessions are recorded under (default: the harness's, claude-code, gemini-cli, codex-cli, copilot-cli, qwen-code, factory-droid or cline)")
	fs.StringVar(&f.policy, "policy", string(interceptors.PolicyIgnore), "when NATS is away or slow: ignore (the event proceeds, with a warning) or fail (tool calls and prompts are blocked, permission requests denied)")
	fs.DurationVar(&f.timeout, "timeout", bridge.DefaultTimeout, "the most one event may take, answer included (a permission request's wait for a person too): keep it under the hook's timeout in the coding agent's settings; an event the agent waits less for is answered within that")
	fs.BoolVar(&f.approve, "approve-modified", false, "Claude Code: answer a tool call the interceptors rewrote with permissionDecision allow (else Claude Code's own permission rules still apply to it); Codex CLI always gets it")
}

// registerFile adds the hook commands' --config: a JSON file of their
// flags' values, in the place of the other commands' --config (the
// hookbus config file).
func (f *bridgeFlags) registerFile(fs *pflag.FlagSet) {
	fs.StringVar(&f.file, "config", "", "a JSON `FILE` of these flags' values ({\"nats\": URL, \"creds\": FILE, \"agent\": ID, ...}; the command line wins): the connection without the environment, which a coding agent may not pass on")
}

// check refuses what the flags cannot mean, after reading --config.
func (f *bridgeFlags) check() error {
	if f.file != "" {
		if err := applyConfig(f.fs, f.file); err != nil {
			return err
		}
	}
	if f.agent != "" {
		if err := events.ValidateID("agent", f.agent); err != nil {
			return fmt.Errorf("%w: --agent: %v", cli.ErrUsage, err)
		}
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

// config is the bridge's configuration on store and hooks (its Harness
// Claude Code unless set).
func (f *bridgeFlags) config(store bridge.Store, hooks bridge.Hooks, log *slog.Logger) bridge.Config {
	return bridge.Config{Store: store, Hooks: hooks, Agent: f.agent, Policy: interceptors.Policy(f.policy),
		Timeout: f.timeout, Answer: claudecode.AnswerOptions{ApproveModified: f.approve}, Logger: log}
}

const agentHookLong = `A coding agent's command hook: configure it for every event its hooks
offer (matcher "*"). It reads the agent's hook input on stdin, records it as
the session's hookbus event (agent --agent, session the agent's session_id;
an event no stage stands for as a harness.event), runs the registry's
interceptors for its stage, and answers on stdout in the agent's own
format. A permission request (Claude Code's and Codex CLI's
PermissionRequest) is recorded as an approval and answered when a person
answers it (observer approve|reject, the web page). It answers within
--timeout, and within the agent's own limit for the event (Claude Code's
SessionEnd: 1.5 s), whatever happens: when NATS is away or slow, by
--policy. docs/CODING_AGENTS.md has each agent's settings snippet and trust
step.

--config FILE is a JSON object of these flags' values (not the hookbus
config file of the other commands), for an agent that runs its hooks
without the environment. Being a hook, it says which bus it uses only
with -v.`

const claudeHookLong = `A Claude Code command hook: loop agent-hook --harness claude. Configure it
for every event (matcher "*") in .claude/settings.json. docs/CLAUDE_CODE.md,
"Claude Code on the bus", has the settings.json snippet. --config FILE is a
JSON object of these flags' values. Being a hook, it says which bus it uses
only with -v.`

// agentHookCmd is loop agent-hook: one hook event of a coding agent, read
// on stdin, recorded and decided on the bus, answered on stdout.
func agentHookCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("agent-hook --harness claude|gemini|codex|copilot|qwen|factory|cline [flags]", "Answer one hook event of a coding agent: Claude Code, Gemini CLI, Codex CLI, GitHub Copilot CLI, Qwen Code, Factory Droid, Cline (a command hook)", agentHookLong, func(fs *pflag.FlagSet) cli.Run {
		var f bridgeFlags
		name := fs.String("harness", "", "the coding agent: claude (Claude Code), gemini (Gemini CLI), codex (Codex CLI), copilot (GitHub Copilot CLI), qwen (Qwen Code), factory (Factory Droid) or cline (Cline)")
		f.register(fs)
		f.registerFile(fs)
		return func(ctx context.Context, _ []string) error {
			code, err := f.agentHook(ctx, a, *name)
			a.Code = code
			return err
		}
	})
}

// claudeHookCmd is loop claude-hook: loop agent-hook --harness claude.
func claudeHookCmd(a *cli.App) *cobra.Command {
	return cli.NoArgsCommand("claude-hook [flags]", "Answer one Claude Code hook event (agent-hook --harness claude)", claudeHookLong, func(fs *pflag.FlagSet) cli.Run {
		var f bridgeFlags
		f.register(fs)
		f.registerFile(fs)
		return func(ctx context.Context, _ []string) error {
			code, err := f.agentHook(ctx, a, claudecode.HarnessName)
			a.Code = code
			return err
		}
	})
}

// agentHook checks the flags and answers one event of the harness name.
func (f *bridgeFlags) agentHook(ctx context.Context, a *cli.App, name string) (int, error) {
	if err := f.check(); err != nil {
		return exitUsage, err
	}
	if name == "" {
		return exitUsage, fmt.Errorf("%w: loop agent-hook needs --harness (%s)", cli.ErrUsage, strings.Join(harnessNames, ", "))
	}
	h, err := harnessOf(name, f.approve)
	if err != nil {
		return exitUsage, err
	}
	// The config file applies; which bus is said only with -v.
	f.conn.App, f.conn.Quiet = a, !a.Log.Verbose
	return f.hook(ctx, h, a.In, a.Out, a.Err, a.Log.Logger(a.Err))
}

// hook reads one hook input of h on stdin and answers it on stdout.
func (f *bridgeFlags) hook(ctx context.Context, h harness.Protocol, stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger) (int, error) {
	raw, err := io.ReadAll(io.LimitReader(stdin, maxHookInput+1))
	if err == nil && len(raw) > maxHookInput {
		err = fmt.Errorf("hook input over %d bytes", maxHookInput)
	}
	var in harness.Input
	if err == nil {
		in, err = h.Parse(raw)
	}
	if err != nil {
		return badInput(stderr, f.policy, err)
	}
	// The harness's own limit for the event bounds everything, the
	// connection included.
	limit := harness.Within(in.Limit(), f.timeout)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	type result struct {
		out *harness.Reply
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := f.handle(ctx, h, in, log)
		done <- result{out, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		r.err = fmt.Errorf("%w: no answer from hookbus within %s", bridge.ErrUnrecorded, limit)
		r.out = in.Outage(interceptors.Policy(f.policy), r.err)
	}
	if errors.Is(r.err, harness.ErrBadInput) {
		return badInput(stderr, f.policy, r.err)
	}
	if r.err != nil {
		fmt.Fprintf(stderr, "loop %s: %v\n", "agent-hook", r.err)
	}
	if len(r.out.Stdout) > 0 {
		fmt.Fprintf(stdout, "%s\n", r.out.Stdout)
	}
	if r.out.Stderr != "" {
		fmt.Fprintln(stderr, r.out.Stderr)
	}
	return r.out.Exit, nil
}

// handle connects, follows the registry when the event may be intercepted
// and handles one event. An error before the bridge runs (the connection)
// gets the outage policy's answer.
func (f *bridgeFlags) handle(ctx context.Context, h harness.Protocol, in harness.Input, log *slog.Logger) (*harness.Reply, error) {
	c, err := f.conn.Open(ctx, "hookbus-agent-hook", log, cli.ReadOnly)
	if err != nil {
		err = fmt.Errorf("%w: %w", bridge.ErrUnrecorded, err)
		return in.Outage(interceptors.Policy(f.policy), err), err
	}
	defer c.Close()
	var hooks bridge.Hooks
	if stage, ok := intercepted(in); ok {
		// One event: compile only the policies of its stage.
		chain, stop, err := syncHooks(ctx, c.Bus, log, policies.ForStages(stage))
		if err != nil {
			err = fmt.Errorf("%w: %w", bridge.ErrUnrecorded, err)
			return in.Outage(interceptors.Policy(f.policy), err), err
		}
		defer stop()
		hooks = chain
	}
	cfg := f.config(c.Bus, hooks, log)
	cfg.Harness = h
	br, err := bridge.New(cfg)
	if err != nil {
		return nil, err
	}
	return br.HandleInput(ctx, in)
}

// intercepted reports whether interceptors may decide on in, and the
// stage whose interceptors do: its own when it accepts them, tool.before
// for a permission request (the tool.before interceptors of its call may
// deny it). Reading the registry costs a process a round trip or two;
// events recorded as a harness.event, and observe-only stages, skip it.
func intercepted(in harness.Input) (events.Stage, bool) {
	m, err := in.Map()
	switch {
	case err != nil || m == nil:
		return "", false
	case m.Stage == events.StageApprovalRequested:
		return events.StageToolBefore, true
	}
	return m.Stage, m.Stage.Interceptable()
}

// badInput reports a hook input that cannot be read: under policy ignore
// the agent's non-blocking error (exit 1, the action proceeds), under
// fail a block (exit 2, the message as the reason).
func badInput(stderr io.Writer, policy string, err error) (int, error) {
	fmt.Fprintf(stderr, "loop agent-hook: %v\n", err)
	if interceptors.Policy(policy) == interceptors.PolicyFail {
		return exitUsage, nil
	}
	return exitFailure, nil
}
