package webui

import (
	"context"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
)

// What the plugins page says of a plugin and the interceptor registry
// (StatsView.Registry).
const (
	// PluginRegistered: the registry holds the plugin (on one of its
	// stages at least): loops call it.
	PluginRegistered = "registered"
	// PluginRemoved: a remote plugin the registry no longer holds: no loop
	// calls it any more; its past decisions stay in the record.
	PluginRemoved = "removed"
	// PluginGone: a plugin that registered itself with a lease and no
	// longer renews it (its process died): no loop calls it; observer
	// hooks prune removes its registrations.
	PluginGone = "gone"
	// PluginInProcess: a plugin only ever called in a loop's own process
	// (a hook of an agent file, a library's chain), which the registry
	// does not list.
	PluginInProcess = "in_process"
)

// noteRemote marks the plugin of a decision or failure called over NATS: a
// remote decision, or a call nobody answered.
func noteRemote(remote map[string]bool, e *events.Event) {
	switch e.Stage {
	case events.StageHookDecided:
		var p events.HookDecided
		if e.DecodeData(&p) == nil && p.Remote {
			remote[p.Plugin] = true
		}
	case events.StageHookFailed:
		var p events.HookFailed
		if e.DecodeData(&p) == nil && p.Kind == events.FailNoResponders {
			remote[p.Plugin] = true
		}
	}
}

// registryStates says of each plugin whether the registry holds it now;
// nil without a Config.Registry. When the registry cannot be read, the
// page logs it and says nothing of it.
func (s *Server) registryStates(ctx context.Context, plugins []audit.PluginTotals, remote map[string]bool) map[string]string {
	if s.cfg.Registry == nil || len(plugins) == 0 {
		return nil
	}
	regs, err := s.cfg.Registry.Entries(ctx)
	if err != nil {
		s.log.Warn("webui: the interceptor registry could not be read; the plugins page says nothing of it", "err", err)
		return nil
	}
	registered, live := map[string]bool{}, map[string]bool{}
	for _, r := range regs {
		registered[r.Plugin] = true
		live[r.Plugin] = live[r.Plugin] || !r.Gone
	}
	out := make(map[string]string, len(plugins))
	for _, p := range plugins {
		switch {
		case registered[p.Plugin] && !live[p.Plugin]:
			out[p.Plugin] = PluginGone
		case registered[p.Plugin]:
			out[p.Plugin] = PluginRegistered
		case remote[p.Plugin]:
			out[p.Plugin] = PluginRemoved
		default:
			out[p.Plugin] = PluginInProcess
		}
	}
	return out
}
