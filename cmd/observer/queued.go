package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/events"
)

// queuedRun is a request on the run queue as observer runs --queued shows
// it (one JSON object a line with --json).
type queuedRun struct {
	runs.Pending
	// AgeSeconds is how long it has been queued.
	AgeSeconds float64 `json:"age_seconds"`
	// WaitingFor says why no worker takes it now ("no worker serves agent
	// ops", "no worker has definition 3f2a9c0b1d4e of agent ops"); empty
	// when a live worker takes such requests or one has it.
	WaitingFor string `json:"waiting_for,omitempty"`
}

// readQueue lists the queued run requests of agent (every agent for "")
// and session (every one for ""), each with what it waits for.
func readQueue(ctx context.Context, c *cli.Conn, agent, session string, stderr io.Writer) ([]queuedRun, error) {
	list, truncated, err := runs.New(c.Bus).List(ctx, agent)
	if err != nil {
		return nil, c.Explain(err)
	}
	if truncated {
		fmt.Fprintf(stderr, "the run queue holds more requests than the %d read\n", len(list))
	}
	view, verr := runs.NewFleet(c.Bus).View(ctx)
	if verr != nil {
		fmt.Fprintf(stderr, "cannot tell which workers serve the queued requests: %v\n", c.Explain(verr))
	}
	now := time.Now()
	var out []queuedRun
	for _, q := range list {
		if session != "" && q.SessionID != session {
			continue
		}
		r := queuedRun{Pending: q, AgeSeconds: now.Sub(q.Queued).Seconds()}
		if view != nil && !q.Taken {
			r.WaitingFor = view.WaitingFor(q.AgentID, q.Definition)
		}
		out = append(out, r)
	}
	return out, nil
}

// printQueue writes the queue as a table.
func printQueue(w io.Writer, list []queuedRun) error {
	tw := table(w, "QUEUED\tAGENT\tSESSION\tDEFINITION\tKIND\tAGE\tSTATE")
	for _, q := range list {
		kind := "new run"
		switch {
		case q.Compact:
			kind = "compaction"
		case q.Resume:
			kind = "resumption"
		}
		state := "waits its turn"
		switch {
		case q.Taken:
			state = "taken by a worker (running, or back for another attempt)"
		case q.WaitingFor != "":
			state = q.WaitingFor
		}
		session := cmp.Or(q.SessionID, "-")
		run := cmp.Or(q.RunID, fmt.Sprintf("(seq %d)", q.Seq))
		age := time.Duration(q.AgeSeconds * float64(time.Second))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", shortRun(run), q.AgentID, session,
			events.ShortDigest(q.Definition), kind, duration(age), state)
	}
	return tw.Flush()
}

// queuedRequests is observer runs --queued.
func queuedRequests(ctx context.Context, d *deskFlags, agent, session string, stdout, stderr io.Writer) error {
	c, gctx, release, err := d.conn.OpenGuarded(ctx, "hookbus-observer", d.logger(stderr), cli.ReadOnly)
	if err != nil {
		return err
	}
	defer release()
	list, err := readQueue(gctx, c, agent, session, stderr)
	if err != nil {
		return err
	}
	return writeList(stdout, stderr, d.out.JSON(), list, "no run requests queued", printQueue)
}
