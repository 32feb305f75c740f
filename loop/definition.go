package loop

import "github.com/hookbus/hookbus/events"

// An attempt runs on the agent definition its run started with: a run
// whose record names another definition than the engine's is refused,
// before anything is written, unless the engine adopts such runs. See
// docs/PROTOCOL.md, "Agent definitions".

// definition is the engine's definition as run.started records it (nil
// when the engine has none).
func (e *Engine) definition() *events.Definition {
	if e.cfg.Definition.Digest == "" {
		return nil
	}
	d := e.cfg.Definition
	return &d
}

// checkDefinition refuses a run recorded on another definition than the
// engine's (a *DefinitionError), or, when the engine adopts such runs,
// keeps the recorded one for the attempt's run.started. A run the request
// pins to the engine's own definition while its record names another (an
// attempt that adopted it since) goes to the recorded one's workers.
func (r *run) checkDefinition(st *runState) error {
	r.adopted = nil
	own, rec := r.eng.cfg.Definition, st.Definition
	if own.Digest == "" || rec == nil || rec.Digest == own.Digest {
		return nil
	}
	if r.eng.cfg.OnDefinitionChange == DefinitionAdopt && r.req.Definition != own.Digest {
		r.eng.cfg.Logger.Warn("loop: run adopted from another definition", "run", r.req.RunID, "agent", r.req.AgentID,
			"recorded", rec.String(), "definition", own.String())
		d := *rec
		r.adopted = &d
		return nil
	}
	return &DefinitionError{RunID: r.req.RunID, AgentID: r.req.AgentID, Recorded: *rec, Engine: own}
}

// RecordedDefinition returns the definition a run's record says it runs
// on: that of its last run.started (by seq) naming one, nil when none
// does. evs are the session's (or the run's) events; a resumption queued
// for the run pins it to this definition (RunRequest.Definition).
func RecordedDefinition(evs []*events.Event, runID string) *events.Definition {
	var out *events.Definition
	var at uint64
	for _, e := range evs {
		if e.RunID != runID || e.Stage != events.StageRunStarted || e.Seq < at {
			continue
		}
		if p, err := events.Data[events.RunStarted](e); err == nil && p.Definition != nil {
			out, at = p.Definition, e.Seq
		}
	}
	return out
}
