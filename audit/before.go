package audit

import (
	"encoding/json"
	"strconv"

	"github.com/hookbus/hookbus/events"
)

// Before rebuilds an event's payload as it was before its interceptors
// changed it, where the record holds it. The stream stores each event as
// the interceptors left it; two payloads are also recorded before any
// interceptor sees them:
//
//   - a tool.before's call as the model asked for it, in the
//     model.responded of its step (the reply as its own hooks left it);
//   - a tool.after's call and result as the tool returned them, in the
//     tool.result written ahead of the tool.after hooks.
//
// The page's diffs, Show's changes and the shadow backtest's inputs all
// start from it, and replay the recorded patches over it in the chain's
// order. Feed it events in each run's order (Add); it keeps the calls and
// raw results of the runs not ended. The zero value is ready.
type Before struct {
	calls   map[string]events.ToolCall         // by run/step/call id: as the model asked for it
	results map[string]events.ToolResultRecord // by run/step/call id: the tool's raw result
	keys    map[string][]string                // by run: its keys, forgotten at its end
}

// BeforeStages returns the stages Before reads to rebuild payloads of
// stage s (model.responded for a tool.before, tool.result for a tool.after)
// with the runs' ends, after which it forgets a run; nil for a stage whose
// payload before its interceptors the record does not hold.
func BeforeStages(s events.Stage) []events.Stage {
	var src events.Stage
	switch s {
	case events.StageToolBefore:
		src = events.StageModelResponded
	case events.StageToolAfter:
		src = events.StageToolResult
	default:
		return nil
	}
	return append([]events.Stage{src}, events.TerminalStages()...)
}

// Add folds one event: the calls of a model.responded, the raw result of a
// tool.result; a run's end forgets the run. Others, and events whose data
// does not decode, change nothing.
func (b *Before) Add(e *events.Event) {
	switch {
	case e.Stage == events.StageModelResponded:
		p, err := events.Data[events.ModelResponded](e)
		if err != nil {
			return
		}
		for _, c := range p.Message.ToolCalls {
			k := b.key(e, c.ID)
			if b.calls == nil {
				b.calls = map[string]events.ToolCall{}
			}
			b.calls[k] = c
		}
	case e.Stage == events.StageToolResult:
		p, err := events.Data[events.ToolResultRecord](e)
		if err != nil {
			return
		}
		k := b.key(e, p.Call.ID)
		if b.results == nil {
			b.results = map[string]events.ToolResultRecord{}
		}
		b.results[k] = p
	case e.Stage.Terminal():
		for _, k := range b.keys[e.RunID] {
			delete(b.calls, k)
			delete(b.results, k)
		}
		delete(b.keys, e.RunID)
	}
}

// key is the key of call in e's run and step (lookup), noted as the run's.
func (b *Before) key(e *events.Event, call string) string {
	k := b.lookup(e, call)
	if b.keys == nil {
		b.keys = map[string][]string{}
	}
	b.keys[e.RunID] = append(b.keys[e.RunID], k)
	return k
}

// Of returns e's payload (JSON) as it was before its interceptors, as the
// events added so far record it: a tool.before's call as its step's
// model.responded asked for it, a tool.after's call and result as its
// tool.result holds them. It is nil for other stages, and when the record
// does not hold it (no such model.responded or tool.result, or e's data
// does not decode).
func (b *Before) Of(e *events.Event) []byte {
	var v any
	switch e.Stage {
	case events.StageToolBefore:
		p, err := events.Data[events.ToolBefore](e)
		if err != nil {
			return nil
		}
		c, ok := b.calls[b.lookup(e, p.Call.ID)]
		if !ok {
			return nil
		}
		if p.Call.Action != nil {
			// The loop normalizes the model's call before its hooks see it.
			c = c.WithAction(events.HarnessHookbus)
		}
		v = events.ToolBefore{Call: c}
	case events.StageToolAfter:
		p, err := events.Data[events.ToolAfter](e)
		if err != nil {
			return nil
		}
		r, ok := b.results[b.lookup(e, p.Call.ID)]
		if !ok {
			return nil
		}
		v = events.ToolAfter{Call: r.Call, Result: r.Result}
	default:
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}

// lookup is the key of call in e's run and step.
func (b *Before) lookup(e *events.Event, call string) string {
	return e.RunID + "/" + strconv.Itoa(e.Step) + "/" + call
}
