package runs

import (
	"context"
	"encoding/hex"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go/jetstream"
)

// A worker follows the fleet: the registered definitions of its agents,
// and, for a definition that adopts runs of others, which of them have runs
// queued.

// onDefinition follows a change of the registry: an agent's registered
// definition replaced (the worker stops or starts taking its new runs), or
// removed (the worker registers its own again).
func (rs *routes) onDefinition(ctx context.Context, e jetstream.KeyValueEntry) {
	rc := rs.rc
	var def *AgentDefinition
	agent := agentOfKey(e.Key())
	if e.Operation() == jetstream.KeyValuePut {
		d, err := decodeDefinition(e)
		if err != nil {
			rc.q.log.Warn("hookbus: unreadable agent definition in the registry ignored", "key", e.Key(), "error", err)
			return
		}
		def, agent = d, d.Agent
	}
	rs.mu.Lock()
	rt := rs.by[agent]
	rs.mu.Unlock()
	if rt == nil {
		return
	}
	own := rt.served.Definition
	if def == nil && own.Digest != "" {
		// Removed by an operator: register ours again (the first worker
		// to do so wins; the others see its entry).
		reg, _, err := rs.fleet.register(ctx, rt.served, rc.cfg.Worker)
		if err != nil {
			rc.q.log.Warn("hookbus: agent definition not registered again", "agent", agent, "error", err)
			return
		}
		def = reg
	}
	rs.mu.Lock()
	was := rt.newRuns
	rt.registered = def
	rt.newRuns = def == nil && own.Digest == "" || def != nil && def.Digest == own.Digest
	if rt.newRuns != was {
		rs.recompute()
	}
	now := rt.newRuns
	rs.mu.Unlock()
	switch {
	case was && !now && own.Digest != "":
		rc.q.log.Warn("hookbus: another definition of the agent is registered: this worker takes no more of its new runs, only those recorded on its own definition",
			"agent", agent, "registered", def.String(), "definition", own.String())
	case was && !now:
		rc.q.log.Warn("hookbus: a definition of the agent is registered: this worker, which has none, takes no more of its runs",
			"agent", agent, "registered", def.String())
	case !was && now:
		rc.q.log.Warn("hookbus: this worker's definition of the agent is the registered one again: it takes its new runs", "agent", agent, "definition", own.String())
	}
}

// agentOfKey is the agent id of a registry key (agentKey's inverse).
func agentOfKey(key string) string {
	if h, ok := strings.CutPrefix(key, "="); ok {
		if b, err := hex.DecodeString(h); err == nil {
			return string(b)
		}
	}
	return key
}

// adopt follows, for the agents whose definition adopts runs recorded on
// others, which other definitions have runs queued, and pulls from their
// consumers while they do.
func (rs *routes) adopt() {
	rc := rs.rc
	defer rc.bg.Done()
	every := max(2*rc.cfg.PollWait, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-rc.bgCtx.Done():
			return
		case <-t.C:
		}
		for _, rt := range rs.list {
			if rt.served.Adopt {
				rs.adoptFor(rt)
			}
		}
	}
}

// adoptFor binds the consumers of rt's agent's other definitions that
// have runs queued, and lets go of those that have none.
func (rs *routes) adoptFor(rt *route) {
	rc := rs.rc
	ctx, cancel := context.WithTimeout(rc.bgCtx, rc.q.timeout)
	defer cancel()
	filter, _ := rc.q.subj.RunsPinned(rt.served.ID)
	st, err := rc.q.js.Stream(ctx, rc.q.names.Runs)
	var info *jetstream.StreamInfo
	if err == nil {
		info, err = st.Info(ctx, jetstream.WithSubjectFilter(filter))
	}
	if err != nil {
		if rc.bgCtx.Err() == nil {
			rc.q.log.Warn("hookbus: queued runs of other definitions not read", "agent", rt.served.ID, "error", err)
		}
		return
	}
	queued := map[string]bool{}
	for subj, n := range info.State.Subjects {
		_, d, err := rc.q.subj.ParseRun(subj)
		if err == nil && n > 0 && d != "" && d != rt.served.Definition.Digest {
			queued[d] = true
		}
	}
	rs.mu.Lock()
	var add []string
	for d := range queued {
		if rt.adopted[d] == nil {
			add = append(add, d)
		}
	}
	changed := false
	for d := range rt.adopted {
		if !queued[d] {
			delete(rt.adopted, d)
			changed = true
		}
	}
	if changed {
		rs.recompute()
	}
	rs.mu.Unlock()
	for _, d := range add {
		_, name := ConsumerNames(rc.cfg.Durable, rt.served.ID, d)
		subj, _ := rc.q.subj.RunPinned(rt.served.ID, d)
		src := &source{durable: name, filter: subj, agent: rt.served.ID, digest: d}
		if err := rs.bind(ctx, src); err != nil {
			rc.q.log.Warn("hookbus: runs of another definition not adopted", "agent", rt.served.ID, "definition", events.ShortDigest(d), "error", err)
			continue
		}
		rc.q.log.Warn("hookbus: adopting the queued runs of another definition of the agent", "agent", rt.served.ID,
			"their_definition", events.ShortDigest(d), "definition", rt.served.Definition.String())
		rs.mu.Lock()
		rt.adopted[d] = src
		rs.recompute()
		rs.mu.Unlock()
	}
}
