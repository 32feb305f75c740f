package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/spf13/pflag"
)

// runProbe sends one synthetic SessionStart through the first hookbus
// hook, as the agent would, and shows its record.
func (d *doctor) runProbe(ctx context.Context, row cliRow, hooks []found, fs *pflag.FlagSet) {
	if len(hooks) == 0 {
		d.line("PROBLEM", "probe: no hookbus hook to send it through")
		return
	}
	h := hooks[0]
	session := fmt.Sprintf("hookbus-doctor-%d", time.Now().UnixNano())
	input := fmt.Appendf(nil, `{"hook_event_name":"SessionStart","session_id":%q,"transcript_path":"","cwd":%q,"source":"startup","timestamp":%q}`,
		session, d.env.project, time.Now().UTC().Format(time.RFC3339))
	if row.probe != nil {
		input = row.probe(session, d.env.project, time.Now())
	}
	agent := rowAgent(row)
	conn := &d.conn
	if u, token, ok := d.gatewayOf(row, h); ok {
		code, body, err := d.post(ctx, u, token, input)
		if err != nil || code != http.StatusOK {
			d.line("PROBLEM", "probe: %s answered %d %s %v", u.Redacted(), code, body, err)
			return
		}
		if parts := strings.Split(strings.Trim(u.Path, "/"), "/"); len(parts) == 2 {
			agent = parts[1]
		}
		if !fs.Changed("nats") && !fs.Changed("context") && os.Getenv("NATS_URL") == "" {
			d.line("note", "probe: sent through %s; give --nats to read its record back", u.Redacted())
			return
		}
	} else {
		cctx, cancel := context.WithTimeout(ctx, d.wait)
		defer cancel()
		cmd := exec.CommandContext(cctx, "sh", "-c", h.entry.Command)
		cmd.Dir, cmd.Stdin = d.env.project, bytes.NewReader(input)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			d.line("PROBLEM", "probe: the hook command failed: %v: %s", err, strings.TrimSpace(stderr.String()))
			return
		}
		f, a, err := agentHookFlags(h.entry.Command)
		if err != nil {
			return
		}
		if a != "" {
			agent = a
		}
		conn = &f.conn
		conn.App, conn.Quiet = d.app, true
	}
	cctx, cancel := context.WithTimeout(ctx, d.wait)
	defer cancel()
	c, err := conn.Open(cctx, "hookbus-doctor", slog.New(slog.DiscardHandler), cli.ReadOnly)
	if err != nil {
		d.line("PROBLEM", "probe: cannot read the record: %v", err)
		return
	}
	defer c.Close()
	for {
		evs, err := c.Bus.SessionEvents(cctx, agent, session)
		if err == nil && len(evs) > 0 {
			var stages []string
			for _, e := range evs {
				stages = append(stages, string(e.Stage))
			}
			d.line("ok", "probe: agent %s session %s recorded: %s", agent, session, strings.Join(stages, " "))
			return
		}
		select {
		case <-cctx.Done():
			d.line("PROBLEM", "probe: agent %s session %s: nothing recorded within %s", agent, session, d.wait)
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
