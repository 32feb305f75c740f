package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus/runs"
)

// defaultAgent is the agent id commands use when none is given.
const defaultAgent = "demo"

// describeRoutes names what a worker serves, for its start line: "agents
// ops (ops v2, 3f2a9c0b1d4e), demo (demo, 1b2c3d4e5f60)".
func describeRoutes(routes []runs.AgentRoute) string {
	parts := make([]string, len(routes))
	for i, r := range routes {
		parts[i] = r.Agent
		if r.Definition != nil {
			parts[i] += " (definition " + r.Definition.String() + ")"
		}
		if !r.NewRuns {
			parts[i] += " [pinned runs only]"
		}
	}
	word := "agents "
	if len(parts) == 1 {
		word = "agent "
	}
	return word + strings.Join(parts, ", ")
}

// printRoutes says loudly, for each agent whose new runs the worker does
// not take, why, and what to do about it.
func printRoutes(w io.Writer, routes []runs.AgentRoute) {
	for _, r := range routes {
		if r.NewRuns {
			continue
		}
		switch {
		case r.Definition == nil:
			fmt.Fprintf(w, "loop serve: WARNING: agent %s has a registered definition, %s, and this worker runs it on none: it takes none of its runs.\n",
				r.Agent, r.Registered)
		case r.Registered != nil:
			fmt.Fprintf(w, "loop serve: WARNING: agent %s: this worker's definition %s (digest %s) is not the fleet's:\n"+
				"  %s (digest %s) is registered.\n"+
				"  This worker takes no new runs of %s, only runs recorded on its own definition. To make it the fleet's, start it with\n"+
				"  --replace-definition, or give the definition a newer version: than %q.\n",
				r.Agent, r.Definition.String(), r.Definition.Digest, r.Registered, r.Registered.Digest, r.Agent, r.Registered.Version)
		}
	}
}

// watchCoverage tells on stderr, until ctx ends, whether a live worker
// takes new runs of agent: when none does, and again each time that
// changes. It reads the fleet every interval (a fleet it cannot read is
// said once) and returns why nothing took the run when it last looked (""
// when a worker did).
func watchCoverage(ctx context.Context, f *runs.Fleet, agent, subject string, w io.Writer, interval time.Duration) string {
	said, why := "", ""
	for {
		v, err := f.View(ctx)
		if ctx.Err() != nil {
			return why
		}
		now := ""
		switch {
		case err != nil:
			now = "cannot tell whether a worker serves agent " + agent + ": " + err.Error()
		default:
			why = v.WaitingFor(agent, "")
			if why != "" {
				now = why + ": the run waits on " + subject + " until one does"
			} else if said != "" {
				now = "agent " + agent + " is served now, by " + strings.Join(v.Serving(agent), ", ")
			}
		}
		if now != "" && now != said {
			fmt.Fprintf(w, "loop submit: %s\n", now)
			said = now
		}
		select {
		case <-ctx.Done():
			return why
		case <-time.After(interval):
		}
	}
}
