package webui

import (
	"context"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
)

// attemptWorkers folds run.started events: the worker each run's last
// attempt runs in, as it records it (nil when it names none).
type attemptWorkers struct {
	last map[string]*events.Worker // by run id
}

func (w *attemptWorkers) add(e *events.Event) {
	if e.Stage != events.StageRunStarted {
		return
	}
	var p events.RunStarted
	if e.DecodeData(&p) != nil {
		return
	}
	if w.last == nil {
		w.last = map[string]*events.Worker{}
	}
	w.last[e.RunID] = p.Worker
}

// markAbandoned gives each run the worker of its last attempt and, with a
// Config.Fleet, marks those no attempt holds any more: unfinished (neither
// ended nor waiting for a human), nothing recorded for longer than the
// lease, and the last attempt's worker not among the fleet's live workers
// (or named by none). Such a run goes on only when a worker takes its
// request again. When the fleet cannot be read, the page logs it and marks
// nothing.
func (s *Server) markAbandoned(ctx context.Context, ws *attemptWorkers, runs ...*RunSummary) {
	var live map[string]bool // read once, when a run needs it
	now := time.Now()
	for _, r := range runs {
		r.Worker = ws.last[r.RunID]
		if s.cfg.Fleet == nil || r.Status != audit.StatusUnfinished || now.Sub(r.Last) < s.cfg.Lease {
			continue
		}
		if live == nil {
			workers, err := s.cfg.Fleet.Workers(ctx)
			if err != nil {
				s.log.Warn("webui: the live workers could not be read; no run is shown as abandoned", "err", err)
				return
			}
			live = map[string]bool{}
			for _, p := range workers {
				live[p.Name] = true
			}
		}
		r.Abandoned = r.Worker == nil || !live[r.Worker.Name]
	}
}
