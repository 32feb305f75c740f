package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/hookbus/hookbus/events"
)

// PrintTimeline writes one readable line for e:
//
//	08:40:27.123  run 01JD…4KX  #003 step 1  tool.before        clock{}
func PrintTimeline(w io.Writer, e *events.Event) error {
	run := e.RunID
	if len(run) > 10 {
		run = run[:4] + "…" + run[len(run)-4:]
	}
	_, err := fmt.Fprintf(w, "%s  %s/%s run %s  #%03d step %-2d %-18s %s\n",
		e.Time.Local().Format("15:04:05.000"), e.AgentID, e.SessionID, run, e.Seq, e.Step, e.Stage, e.Summary())
	return err
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
