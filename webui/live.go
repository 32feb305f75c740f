package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
)

// liveListStages are the stages the live stream of the lists sends: the
// runs' starts and ends, the approvals.
var liveListStages = slices.Concat([]events.Stage{events.StageRunStarted}, events.TerminalStages(), events.StagesOf(events.GroupApproval))

// handleLive streams events as server-sent events (GET /api/live): with
// run=ID, the events of that run and of its child runs stored from the
// stream sequence from=N on (the page gives its last event's); without,
// the runs' starts, ends and approvals stored from now on, for the lists.
// Each is an "entry" event whose data is an Entry; a "ready" event says
// the stream is reading. It ends when the client goes.
func (s *Server) handleLive(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.fail(w, r, fmt.Errorf("live updates need a streaming connection"))
		return
	}
	root, f, err := liveQuery(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	select {
	case s.live <- struct{}{}:
		defer func() { <-s.live }()
	default:
		s.fail(w, r, errBusy)
		return
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	entries := make(chan *Entry)
	tailed := make(chan error, 1)
	go func() { tailed <- s.tailLive(ctx, root, f, entries) }()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\nevent: ready\ndata: {}\n\n")
	flusher.Flush()
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-tailed:
			if err != nil && ctx.Err() == nil {
				s.log.Warn("webui: live stream ended", "err", err)
				b, _ := json.Marshal(ErrorView{Error: err.Error()})
				fmt.Fprintf(w, "event: failure\ndata: %s\n\n", b)
				flusher.Flush()
			}
			return
		case en := <-entries:
			b, err := json.Marshal(en)
			if err != nil {
				continue
			}
			fmt.Fprintf(w, "event: entry\nid: %d\ndata: %s\n\n", en.Stored, b)
			flusher.Flush()
		case <-beat.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
		}
	}
}

// liveQuery reads /api/live's query: the run whose tree to follow ("" for
// the lists), and what to read of the stream (from=N, or the event after a
// reconnecting browser's Last-Event-ID). A bad one wraps ErrBadRequest.
func liveQuery(r *http.Request) (string, bus.Filter, error) {
	var f bus.Filter
	root := r.FormValue("run")
	if root != "" {
		if err := events.ValidateID("run", root); err != nil {
			return "", f, fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
	}
	if from := r.FormValue("from"); from != "" {
		n, err := strconv.ParseUint(from, 10, 64)
		if err != nil {
			return "", f, fmt.Errorf("%w: from %q is not a stream sequence", ErrBadRequest, from)
		}
		f.From = n
	}
	if last := r.Header.Get("Last-Event-ID"); last != "" { // a reconnecting browser
		if n, err := strconv.ParseUint(last, 10, 64); err == nil {
			f.From = n + 1
		}
	}
	if root == "" {
		f.Stages = liveListStages
	}
	return root, f, nil
}

// tailLive follows f's events and sends those of the live stream on
// entries until ctx ends: with root, the events of that run and of its
// child runs; without, the lists' stages.
func (s *Server) tailLive(ctx context.Context, root string, f bus.Filter, entries chan<- *Entry) error {
	inTree := map[string]bool{root: true}
	return s.cfg.Bus.Tail(ctx, f, func(e *events.Event) error {
		if root != "" {
			switch {
			case inTree[e.RunID]:
			case e.ParentRunID != "" && inTree[e.ParentRunID]:
				inTree[e.RunID] = true
			default:
				return nil
			}
		} else if !slices.Contains(liveListStages, e.Stage) {
			return nil
		}
		en := entryOf(e)
		if d := en.Decision; d != nil && len(d.Patch) > 0 {
			d.Diff = patchOps(d.Patch) // the full diff comes with the run's timeline
		}
		select {
		case entries <- en:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}
