package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// RunIDShown is how many leading characters of a run id the timeline
// shows: a ULID's time (10) and two random characters, a prefix that
// observer replay --run accepts.
const RunIDShown = 12

// PrintTimeline writes one readable line for e, its agent and session as
// agent/session (quoted when an id holds '/' or '"'), its run id shortened
// to a prefix:
//
//	08:40:27.123  demo/s1 run 01KAB3C4D5E6…  #003 step 1  tool.before        clock{}
func PrintTimeline(w io.Writer, e *events.Event) error {
	run := e.RunID
	if len(run) > RunIDShown+1 {
		run = run[:RunIDShown] + "…"
	}
	_, err := fmt.Fprintf(w, "%s  %s/%s run %s  #%03d step %-2d %-18s %s\n",
		e.Time.Local().Format("15:04:05.000"), shownID(e.AgentID), shownID(e.SessionID), run, e.Seq, e.Step, e.Stage, e.Summary())
	return err
}

// shownID quotes an id that would make agent/session ambiguous.
func shownID(id string) string {
	if strings.ContainsAny(id, `/"`) {
		return strconv.Quote(id)
	}
	return id
}

// PrintJSON writes e as one line of CloudEvents JSON (structured format).
func PrintJSON(w io.Writer, e *events.Event) error {
	b, err := json.Marshal(e.CloudEvent())
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
