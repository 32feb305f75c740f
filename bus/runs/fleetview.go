package runs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// FleetView is the fleet as read at one moment: the registered definitions
// and the live workers.
type FleetView struct {
	Definitions map[string]*AgentDefinition // by agent id
	Workers     []WorkerPresence
}

// View reads the fleet's definitions and live workers. The error wraps
// ErrFleet.
func (f *Fleet) View(ctx context.Context) (*FleetView, error) {
	defs, err := f.Definitions(ctx)
	if err != nil {
		return nil, err
	}
	ws, err := f.Workers(ctx)
	if err != nil {
		return nil, err
	}
	return &FleetView{Definitions: defs, Workers: ws}, nil
}

// WaitingFor says why no live worker takes a request of agent now (pinned
// to digest, or unpinned for ""), for people: "no worker serves agent ops",
// "no worker has definition 3f2a9c0b1d4e of agent ops". It is "" when a
// live worker takes such requests: the request only waits its turn.
func (v *FleetView) WaitingFor(agent, digest string) string {
	served := false
	for _, w := range v.Workers {
		for _, r := range w.Agents {
			if r.Agent != agent {
				continue
			}
			served = true
			switch {
			case digest == "" && r.NewRuns:
				return ""
			case digest != "" && r.Definition != nil && r.Definition.Digest == digest:
				return ""
			case digest != "" && r.NewRuns && r.Adopts:
				return ""
			}
		}
	}
	switch {
	case !served:
		return "no worker serves agent " + agent
	case digest != "":
		return fmt.Sprintf("no worker has definition %s of agent %s", events.ShortDigest(digest), agent)
	case v.Definitions[agent] != nil:
		return fmt.Sprintf("no live worker has definition %s of agent %s, the one registered; the live ones run %s and take only runs recorded on it: "+
			"restart one with loop serve --replace-definition to make its definition the fleet's (or start a worker with the registered one)",
			v.Definitions[agent].Short(), agent, strings.Join(v.servedDefinitions(agent), ", "))
	}
	return "no worker takes new runs of agent " + agent
}

// servedDefinitions lists the definitions the live workers serve agent on
// (short forms, each once).
func (v *FleetView) servedDefinitions(agent string) []string {
	var out []string
	for _, w := range v.Workers {
		for _, r := range w.Agents {
			if r.Agent != agent {
				continue
			}
			d := "no definition"
			if r.Definition != nil {
				d = r.Definition.String()
			}
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// Serving lists the names of the live workers that take agent's new runs.
func (v *FleetView) Serving(agent string) []string {
	var out []string
	for _, w := range v.Workers {
		for _, r := range w.Agents {
			if r.Agent == agent && r.NewRuns {
				out = append(out, w.Name)
			}
		}
	}
	return out
}
