package interceptors

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
)

// The result read back from the record of the call that ended a chain is
// the result Run gave, but for the payload and the records: a resumed run
// acts on the same decision, reason, plugin, mock and text for the model.
func TestRecordedResultIsRunsResult(t *testing.T) {
	toolBefore := events.ToolBefore{Call: events.ToolCall{ID: "c1", Name: "bash"}}
	for _, tc := range []struct {
		name    string
		stage   events.Stage
		payload any
		reg     Registration
		ic      Interceptor
	}{
		{"deny", events.StageToolBefore, toolBefore, Registration{}, decide(&Decision{Kind: Deny, Reason: "no shell"}, nil)},
		{"deny without a reason", events.StageToolBefore, toolBefore, Registration{}, decide(&Decision{Kind: Deny}, nil)},
		{"mock", events.StageToolBefore, toolBefore, Registration{}, decide(Mocked("done", false), nil)},
		{"ask without a reason", events.StageToolBefore, toolBefore, Registration{}, decide(&Decision{Kind: Ask}, nil)},
		{"stop without a reason", events.StageToolBefore, toolBefore, Registration{}, decide(&Decision{Kind: Stop}, nil)},
		{"continue with context", events.StageStop, events.Stop{}, Registration{}, decide(&Decision{Kind: Continue, Context: "check again"}, nil)},
		{"continue with a reason", events.StageStop, events.Stop{}, Registration{}, decide(&Decision{Kind: Continue, Reason: "not done"}, nil)},
		{"failed closed", events.StageToolBefore, toolBefore, Registration{Policy: PolicyFail}, decide(nil, errors.New("down"))},
		{"failed closed where deny is not accepted", events.StageStop, events.Stop{}, Registration{Policy: PolicyFail}, decide(nil, errors.New("down"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := tc.reg
			reg.Plugin, reg.Stage = "guard", tc.stage
			out := runOne(t, reg, tc.ic, newEvent(t, tc.stage, "bash", tc.payload))
			if len(out.Records) != 1 {
				t.Fatalf("%d records", len(out.Records))
			}
			rec := out.Records[0]
			var got *ChainResult
			if rec.Failure != nil {
				f := rec.HookFailed()
				got = RecordedFailure(&f)
			} else {
				d := rec.HookDecided()
				got = RecordedResult(&d)
			}
			want := *out
			want.Data, want.Records, want.Shadow = nil, nil, nil
			if !reflect.DeepEqual(got, &want) {
				t.Fatalf("recorded %+v\nrun      %+v", got, &want)
			}
		})
	}
}

func TestResultData(t *testing.T) {
	r := &ChainResult{Stage: events.StageToolBefore, Data: json.RawMessage(`{"call":{"id":"c1","name":"Bash"}}`)}
	if p, err := ResultData[events.ToolBefore](r); err != nil || p.Call.ID != "c1" {
		t.Fatalf("ResultData = %+v, %v", p, err)
	}
	r.Data = json.RawMessage(`[`)
	if _, err := ResultData[events.ToolBefore](r); !errors.Is(err, events.ErrPayload) || !strings.Contains(err.Error(), "tool.before") {
		t.Fatalf("undecodable data: %v, want ErrPayload naming the stage", err)
	}
}
