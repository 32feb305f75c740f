package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
)

// consumerNames lists the consumers of a stream.
func consumerNames(t *testing.T, b *bus.Bus, stream string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	st, err := b.JetStream().Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	l := st.ListConsumers(ctx)
	for ci := range l.Info() {
		out = append(out, ci.Name)
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// A worker resumes the runs of each agent it serves: one observer of the
// answers and one consumer of the wake-ups per agent, named after it, an
// agent id a consumer name may not hold encoded as the run consumers
// encode it.
func TestResumerPerServedAgent(t *testing.T) {
	b := bustest.StartBus(t)
	served := runs.Agents("ops", "team/ops")
	stop, err := startResumer(t.Context(), b, served, nil)
	if err != nil {
		t.Fatalf("startResumer: %v", err)
	}
	t.Cleanup(stop)
	runsName, _ := runs.ConsumerNames(runs.DefaultDurable, "team/ops", "")
	encoded := runsName[len(runs.DefaultDurable+"-run-"):]
	if encoded == "team/ops" {
		t.Fatalf("agent id not encoded: %q", runsName)
	}
	if got, want := consumerNames(t, b, b.Names().Events), []string{"hookbus-resume-" + encoded, "hookbus-resume-ops"}; !slices.Equal(got, want) {
		t.Errorf("consumers of the events: %v, want %v", got, want)
	}
	if got, want := consumerNames(t, b, b.Names().Wakes), []string{"hookbus-wakes-" + encoded, "hookbus-wakes-ops"}; !slices.Equal(got, want) {
		t.Errorf("consumers of the wake-ups: %v, want %v", got, want)
	}
}
