package events

// Superseded marks, by index, the events of evs (a stream's events in the
// order stored) that a later attempt of their run superseded; nil when none
// is. A run's second and later run.started (an attempt that resumed it)
// with seq N supersedes every event of the run stored before it with seq N
// or more: those were written by an earlier attempt after the resuming
// attempt read the record, so it never saw them (appends are fenced, so
// nothing of the earlier attempt is stored after the new claim). A
// run.started stored after its run's end (run.completed or run.failed)
// supersedes nothing: a run never resumes once ended. Readers fold a run
// without them; docs/PROTOCOL.md ("One writer per session") has the rule.
func Superseded(evs []*Event) map[int]bool {
	var out map[int]bool
	started, ended := map[string]bool{}, map[string]bool{}
	for i, e := range evs {
		if e.Stage == StageRunCompleted || e.Stage == StageRunFailed {
			ended[e.RunID] = true
		}
		if e.Stage != StageRunStarted || ended[e.RunID] {
			continue
		}
		if !started[e.RunID] {
			started[e.RunID] = true
			continue
		}
		for j := 0; j < i; j++ {
			if o := evs[j]; o.RunID == e.RunID && o.Seq >= e.Seq {
				if out == nil {
					out = map[int]bool{}
				}
				out[j] = true
			}
		}
	}
	return out
}
