package events_test

import (
	"testing"

	"github.com/hookbus/hookbus/events"
)

// A later attempt's run.started supersedes the earlier attempt's events
// stored before it with its seq or more; one stored after the run's end
// supersedes nothing.
func TestSuperseded(t *testing.T) {
	ev := func(run string, seq uint64, st events.Stage) *events.Event {
		return &events.Event{RunID: run, Seq: seq, Stage: st}
	}
	for _, tc := range []struct {
		name string
		evs  []*events.Event
		want []int
	}{
		{"takeover", []*events.Event{ev("r", 1, events.StageRunStarted), ev("r", 2, events.StageStepStarted), ev("r", 3, events.StageStepCompleted),
			ev("r", 2, events.StageRunStarted)}, []int{1, 2}},
		{"claim after the end", []*events.Event{ev("r", 1, events.StageRunStarted), ev("r", 2, events.StageStop), ev("r", 3, events.StageRunCompleted),
			ev("r", 3, events.StageRunStarted)}, nil},
		{"claim after a failed end", []*events.Event{ev("r", 1, events.StageRunStarted), ev("r", 2, events.StageRunFailed),
			ev("r", 2, events.StageRunStarted)}, nil},
		{"another run's end", []*events.Event{ev("r", 1, events.StageRunStarted), ev("o", 1, events.StageRunCompleted), ev("r", 2, events.StageStepStarted),
			ev("r", 2, events.StageRunStarted)}, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := events.Superseded(tc.evs)
			if len(got) != len(tc.want) {
				t.Fatalf("superseded %v, want indexes %v", got, tc.want)
			}
			for _, i := range tc.want {
				if !got[i] {
					t.Fatalf("superseded %v, want indexes %v", got, tc.want)
				}
			}
		})
	}
}
