package main

import (
	"context"
	"log/slog"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// startResumer starts what resumes the runs of the agents a worker serves
// that wait for approval: a durable observer of their approval.resolved
// events (hookbus-resume-<agent>) and a consumer of their due wake-ups
// (hookbus-wakes-<agent>), one of each per agent, shared by the workers
// that serve it. An answer recorded while no worker ran is in the record:
// the observer finds it when the worker starts. A resumption is queued
// pinned to the definition the run's record names, for the workers that
// hold it (loop.Resumer). stop ends them.
func startResumer(ctx context.Context, b *bus.Bus, agents []runs.ServedAgent, log *slog.Logger) (stop func(), err error) {
	rs := &loop.Resumer{History: b, Recorder: b, Queue: runs.New(b), Source: loop.DefaultSource, Logger: log}
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	for _, a := range agents {
		durable := runs.AgentDurable("hookbus-resume", a.ID)
		o, err := b.Observe(ctx, bus.ObserveConfig{Durable: durable, Agent: a.ID, Stages: []events.Stage{events.StageApprovalResolved}, MaxDeliver: -1}, rs.Resolved)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, o.Stop)
		w, err := runs.New(b).ConsumeWakes(ctx, runs.WakeConsumerConfig{Agent: a.ID}, rs.Due)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, w.Stop)
	}
	return stop, nil
}
