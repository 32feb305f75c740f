package main

import (
	"context"
	"log/slog"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// startResumer starts what resumes the runs of agents (every agent's when
// empty) that wait for approval: a durable observer of their
// approval.resolved events and a consumer of their due wake-ups, one of
// each per agent, shared by the workers that serve it. An answer recorded
// while no worker ran is in the record: the observer finds it when the
// worker starts. stop ends them.
func startResumer(ctx context.Context, b *bus.Bus, agents []string, log *slog.Logger) (stop func(), err error) {
	rs := &loop.Resumer{History: b, Recorder: b, Queue: b, Source: loop.DefaultSource, Logger: log}
	if len(agents) == 0 {
		agents = []string{""}
	}
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	for _, agent := range agents {
		durable := "hookbus-resume"
		if agent != "" {
			durable += "-" + agent
		}
		o, err := b.Observe(ctx, bus.ObserveConfig{Durable: durable, Agent: agent, Stages: []events.Stage{events.StageApprovalResolved}, MaxDeliver: -1}, rs.Resolved)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, o.Stop)
		w, err := b.ConsumeWakes(ctx, bus.WakeConsumerConfig{Agent: agent}, rs.Due)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, w.Stop)
	}
	return stop, nil
}
