package loop_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
	"github.com/hookbus/hookbus/loop/scripted"
)

func definition(name, version string) events.Definition {
	sum := sha256.Sum256([]byte(name + "/" + version))
	return events.Definition{Digest: hex.EncodeToString(sum[:]), Name: name, Version: version}
}

// startedDefs lists what each run.started of a run records: its definition
// and the previous one (nil when absent).
func startedDefs(t *testing.T, evs []*events.Event) [][2]*events.Definition {
	t.Helper()
	var out [][2]*events.Definition
	for _, e := range evs {
		if e.Stage != events.StageRunStarted {
			continue
		}
		var p events.RunStarted
		if err := e.DecodeData(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]*events.Definition{p.Definition, p.PreviousDefinition})
	}
	return out
}

// waitingRun starts a run on an engine of definition v1 that waits for a
// human's approval of its calculator call, records alice's approval as a
// client does, and returns an engine of definition v2 (policy), the run,
// and the resumption a worker's Resumer queued from the recorded answer.
func waitingRun(t *testing.T, j *looptest.Journal, v1, v2 events.Definition, policy string) (*loop.Engine, *events.RunRequest, *events.RunRequest) {
	t.Helper()
	old := newEngine(t, j, loop.Config{Hooks: asker(t), Queue: &queue{}, Definition: v1})
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "ops", SessionID: "s1", Prompt: "go"}
	res, err := old.Run(ctxT(t), req)
	if err != nil || res.Reason != loop.ReasonWaiting {
		t.Fatalf("first attempt: %+v, %v", res, err)
	}
	n := len(j.Events())
	ar, err := answerAs(t, j, req, res.Waiting[0].Call.ID, events.ActionApprove, "alice", "")
	if err != nil || len(ar.Waiting) != 0 {
		t.Fatalf("answer: %+v, %v", ar, err)
	}
	q := &queue{}
	rs := &loop.Resumer{History: j, Recorder: j, Queue: q}
	for _, e := range j.Events()[n:] {
		if err := rs.Resolved(ctxT(t), e); err != nil {
			t.Fatal(err)
		}
	}
	if q.resumes.Load() != 1 {
		t.Fatalf("%d resumptions queued, want 1", q.resumes.Load())
	}
	neu := newEngine(t, j, loop.Config{Hooks: asker(t), Queue: &queue{}, Definition: v2, OnDefinitionChange: policy})
	resume := *q.last
	return neu, req, &resume
}

// Every attempt's run.started records the engine's definition, and the
// resumption a worker queues from a recorded answer is pinned to the
// run's.
func TestRunStartedRecordsTheDefinition(t *testing.T) {
	j := looptest.New()
	v1 := definition("ops", "1")
	_, req, resume := waitingRun(t, j, v1, v1, "")
	if resume.Definition != v1.Digest || !resume.Resume {
		t.Fatalf("the resumption %+v is not pinned to %s", resume, v1.Digest)
	}
	defs := startedDefs(t, runEvents(j.Events(), req.RunID))
	if len(defs) != 1 || defs[0][0] == nil || *defs[0][0] != v1 || defs[0][1] != nil {
		t.Fatalf("run.started definitions %+v", defs)
	}
	if d := loop.RecordedDefinition(j.Events(), req.RunID); d == nil || *d != v1 {
		t.Fatalf("RecordedDefinition = %+v", d)
	}
	if d := loop.RecordedDefinition(j.Events(), "another"); d != nil {
		t.Fatalf("RecordedDefinition of another run = %+v", d)
	}
}

// An engine whose definition is not the one a run is recorded on refuses
// it before writing anything (an error naming both, a hand-off to the
// recorded one); an engine of the recorded definition finishes it.
func TestAnAttemptRunsOnlyOnItsRunsDefinition(t *testing.T) {
	j := looptest.New()
	v1, v2 := definition("ops", "1"), definition("ops", "2")
	neu, req, resume := waitingRun(t, j, v1, v2, loop.DefinitionWait)
	if resume.Definition != v1.Digest {
		t.Fatalf("the resumption %+v is not pinned to the run's definition", resume)
	}
	before := len(j.Events())
	unpinned := *resume
	unpinned.Definition = ""
	res, err := neu.Run(ctxT(t), &unpinned)
	var de *loop.DefinitionError
	if !errors.Is(err, loop.ErrOtherDefinition) || !errors.As(err, &de) || de.Recorded != v1 || de.Engine != v2 || res != nil {
		t.Fatalf("Run on another definition = %+v, %v", res, err)
	}
	if n := len(j.Events()); n != before {
		t.Fatalf("the refused attempt wrote %d events", n-before)
	}
	old := newEngine(t, j, loop.Config{Hooks: asker(t), Definition: v1})
	res, err = old.Run(ctxT(t), resume)
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("Run on the run's definition = %+v, %v", res, err)
	}
	for _, d := range startedDefs(t, runEvents(j.Events(), req.RunID)) {
		if d[0] == nil || *d[0] != v1 || d[1] != nil {
			t.Fatalf("an attempt ran on %+v", d)
		}
	}
}

// An engine whose definition adopts runs of others goes on with the run,
// and its run.started records both definitions; it still refuses a run
// pinned to its own definition whose record names another.
func TestAnAdoptingDefinitionRecordsBoth(t *testing.T) {
	j := looptest.New()
	v1, v2 := definition("ops", "1"), definition("ops", "2")
	neu, req, resume := waitingRun(t, j, v1, v2, loop.DefinitionAdopt)
	pinnedToNew := *resume
	pinnedToNew.Definition = v2.Digest
	if _, err := neu.Run(ctxT(t), &pinnedToNew); !errors.Is(err, loop.ErrOtherDefinition) {
		t.Fatalf("a request pinned to the new definition of a run recorded on the old: %v", err)
	}
	res, err := neu.Run(ctxT(t), resume)
	if err != nil || res.Reason != events.ReasonDone {
		t.Fatalf("adopted run = %+v, %v", res, err)
	}
	defs := startedDefs(t, runEvents(j.Events(), req.RunID))
	if len(defs) != 2 || *defs[0][0] != v1 || defs[0][1] != nil || *defs[1][0] != v2 || defs[1][1] == nil || *defs[1][1] != v1 {
		t.Fatalf("run.started definitions %+v; want v1, then v2 naming v1", defs)
	}
	if d := loop.RecordedDefinition(j.Events(), req.RunID); d == nil || *d != v2 {
		t.Fatalf("RecordedDefinition after the adoption = %+v", d)
	}
}

// A worker hands a run of another definition back as a hand-off, and a
// request for an agent it has no engine for back to the queue: neither is
// acknowledged as done.
func TestWorkerHandsOffWhatItMustNotRun(t *testing.T) {
	j := looptest.New()
	v1, v2 := definition("ops", "1"), definition("ops", "2")
	_, _, resume := waitingRun(t, j, v1, v2, loop.DefinitionWait)
	resume.Definition = ""
	w := loop.NewAgentsWorker(map[string]*loop.Engine{"ops": newEngine(t, j, loop.Config{Definition: v2})}, nil)
	err := w.Handle(ctxT(t), resume)
	var de *loop.DefinitionError
	if !errors.Is(err, loop.ErrOtherDefinition) || !errors.As(err, &de) || de.Recorded.Digest != v1.Digest {
		t.Fatalf("Handle of a run recorded on another definition = %v", err)
	}
	if err := w.Handle(ctxT(t), &events.RunRequest{RunID: events.NewID(), AgentID: "nobody", SessionID: "s", Prompt: "p"}); err == nil {
		t.Fatal("a request for an agent the worker has no engine for was taken as done")
	}
}

func TestEngineRefusesABadDefinition(t *testing.T) {
	j := looptest.New()
	for _, cfg := range []loop.Config{
		{Emitter: j, History: j, Model: scripted.New(nil), OnDefinitionChange: "maybe"},
		{Emitter: j, History: j, Model: scripted.New(nil), Definition: events.Definition{Digest: "short"}},
	} {
		if _, err := loop.New(cfg); !errors.Is(err, loop.ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// Each attempt's run.started records the worker it runs in, when the
// engine has one, so a run resumed elsewhere shows where each attempt ran.
func TestRunStartedRecordsTheWorker(t *testing.T) {
	j := looptest.New()
	for _, w := range []*events.Worker{{Name: "node-a:12", Host: "node-a"}, nil} {
		eng, err := loop.New(loop.Config{Emitter: j, History: j, Model: scripted.New(scripted.Demo()), Worker: w})
		if err != nil {
			t.Fatal(err)
		}
		res, err := eng.Run(t.Context(), &events.RunRequest{AgentID: "a", SessionID: "s", Prompt: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		var got *events.Worker
		for _, e := range runEvents(j.Events(), res.RunID) {
			var p events.RunStarted
			if e.Stage == events.StageRunStarted && e.DecodeData(&p) == nil {
				got = p.Worker
			}
		}
		if (w == nil) != (got == nil) || w != nil && *got != *w {
			t.Fatalf("run.started records worker %+v, want %+v", got, w)
		}
	}
}
