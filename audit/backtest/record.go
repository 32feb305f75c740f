package backtest

import (
	"encoding/json"
	"reflect"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// recordOf reads a hook.decided or hook.failed as a decision record (a
// failure as decision "failed:<kind>", deny when it failed closed); shadow
// records and those that do not decode are left out.
func recordOf(e *events.Event) (events.HookDecided, bool) {
	if e.Stage == events.StageHookDecided {
		d, err := events.Data[events.HookDecided](e)
		if err != nil || d.Shadow || d.EventID == "" {
			return d, false
		}
		return d, true
	}
	f, err := events.Data[events.HookFailed](e)
	if err != nil || f.EventID == "" || f.Outcome == interceptors.OutcomeShadow {
		return events.HookDecided{}, false
	}
	d := events.HookDecided{Plugin: f.Plugin, Stage: f.Stage, EventID: f.EventID, Decision: "failed:" + f.Kind, Reason: f.Error}
	if f.Outcome == interceptors.FailedClosed {
		d.Reason = "failed closed: " + f.Error
		d.Annotations = map[string]string{"closed": string(interceptors.Deny)}
	}
	return d, true
}

// recordedFor returns what was recorded for the candidate on an event whose
// chain left recs: its own decision when it was called, else the chain's
// outcome; and at, the candidate's place in recs (len(recs) when it was
// not called).
func recordedFor(recs []events.HookDecided, plugin string) (decision, by string, at int) {
	at = len(recs)
	for i, r := range recs {
		if r.Plugin == plugin && r.Decision != string(interceptors.Skipped) {
			return r.Decision, plugin, i
		}
	}
	for _, r := range recs {
		switch {
		case r.Annotations["closed"] != "":
			return string(interceptors.Deny), r.Plugin, at
		case interceptors.Kind(r.Decision).Ends():
			return r.Decision, r.Plugin, at
		}
	}
	return string(interceptors.Allow), "", at
}

// input is the event the candidate saw at its place at in the chain that
// left recs on e (or would have seen at the end of the chain): e as stored
// when no interceptor from that place on modified it; else e with the
// payload before the chain (before, nil when not recorded) and the patches
// of the interceptors before that place, once the record is checked to
// give back the stored payload with all of them. nil: not reconstructible.
func input(e *events.Event, recs []events.HookDecided, at int, before []byte) *events.Event {
	if !modified(recs[at:]) {
		return e
	}
	if before == nil {
		return nil
	}
	doc, err := replay(before, recs[:at])
	if err != nil {
		return nil
	}
	if all, err := replay(doc, recs[at:]); err != nil || !sameData(e.Stage, all, e.Data) {
		return nil
	}
	in := e.Clone()
	in.Data = doc
	return in
}

func modified(recs []events.HookDecided) bool {
	return slices.ContainsFunc(recs, func(r events.HookDecided) bool { return r.Decision == string(interceptors.Modify) })
}

// replay applies the records' patches to doc, in order.
func replay(doc []byte, recs []events.HookDecided) ([]byte, error) {
	for _, r := range recs {
		if len(r.Patch) == 0 {
			continue
		}
		p, err := jsonpatch.DecodePatch(r.Patch)
		if err != nil {
			return nil, err
		}
		if doc, err = p.Apply(doc); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

// sameData reports whether a rebuilt payload of stage is the stored one,
// but for what the loop adds after the chain (a tool.after's context, the
// call's action).
func sameData(stage events.Stage, rebuilt, stored []byte) bool {
	var a, b any
	switch stage {
	case events.StageToolAfter:
		var x, y events.ToolAfter
		if json.Unmarshal(rebuilt, &x) != nil || json.Unmarshal(stored, &y) != nil {
			return false
		}
		x.Context, y.Context = "", ""
		x.Call.Action, y.Call.Action = nil, nil
		rebuilt, _ = json.Marshal(x)
		stored, _ = json.Marshal(y)
	case events.StageToolBefore:
		// The action is normalized again from the call as the hooks left it.
		var x, y events.ToolBefore
		if json.Unmarshal(rebuilt, &x) != nil || json.Unmarshal(stored, &y) != nil {
			return false
		}
		x.Call.Action, y.Call.Action = nil, nil
		rebuilt, _ = json.Marshal(x)
		stored, _ = json.Marshal(y)
	}
	if json.Unmarshal(rebuilt, &a) != nil || json.Unmarshal(stored, &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// candidateDecision is what the candidate's one call decided.
func candidateDecision(out *interceptors.ChainResult) (decision, reason string) {
	if len(out.Records) == 0 {
		return string(interceptors.Allow), ""
	}
	r := out.Records[0]
	if r.Failure != nil {
		return "failed:" + r.Failure.Kind, r.Failure.Err.Error()
	}
	return string(r.Decision), r.Reason
}
