package interceptors

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
)

func TestParseDecision(t *testing.T) {
	for _, tc := range []struct {
		body string
		kind Kind   // when valid
		err  string // substring of the error when invalid
	}{
		{body: "", kind: Allow},
		{body: " \n\t", kind: Allow},
		{body: `{"decision":"allow"}`, kind: Allow},
		{body: `{"decision":"allow","context":"note","warnings":["w"],"annotations":{"k":"v"}}`, kind: Allow},
		{body: `{"decision":"deny","reason":"no"}`, kind: Deny},
		{body: `{"decision":"deny"}`, kind: Deny},
		{body: `{"decision":"stop","reason":"budget"}`, kind: Stop},
		{body: `{"decision":"ask","reason":"confirm?"}`, kind: Ask},
		{body: `{"decision":"modify","data":{"prompt":"x"}}`, kind: Modify},
		{body: `{"decision":"modify","data":{"prompt":"x"},"patch":null}`, kind: Modify},
		{body: `{"decision":"modify","patch":[{"op":"replace","path":"/prompt","value":"x"}]}`, kind: Modify},
		{body: `{"decision":"modify","data":null,"patch":[{"op":"add","path":"/a","value":null}]}`, kind: Modify},
		{body: `{"decision":"modify","patch":[{"op":"move","from":"/a","path":"/b"},{"op":"remove","path":"/c~1d~0"},{"op":"test","path":"","value":{}}]}`, kind: Modify},
		{body: `{"decision":"modify","patch":[]}`, kind: Modify},
		{body: `{"decision":"mock","data":{"content":"42","is_error":true}}`, kind: Mock},
		{body: `{"decision":"mock","data":{"content":""}}`, kind: Mock},
		{body: `{"decision":"continue","context":"run the tests"}`, kind: Continue},
		{body: `{"decision":"continue","reason":"go on"}`, kind: Continue},
		{body: `{"decision":"allow","future_field":1}`, kind: Allow},

		{body: `{}`, err: "no decision"},
		{body: `null`, err: "no decision"},
		{body: `{"decison":"deny"}`, err: "no decision"},
		{body: `{"decision":"alow"}`, err: `unknown decision "alow"`},
		{body: `{"decision":"ALLOW"}`, err: "unknown decision"},
		{body: `"allow"`, err: "cannot unmarshal"},
		{body: `[]`, err: "cannot unmarshal"},
		{body: `allow`, err: "invalid character"},
		{body: `{"decision":"allow"} {}`, err: "invalid character"},
		{body: `{"decision":"allow"`, err: "unexpected end"},
		{body: `{"decision":1}`, err: "cannot unmarshal"},
		{body: `{"decision":"modify","data":{},"patch":[]}`, err: "both data and patch"},
		{body: `{"decision":"modify"}`, err: "neither data nor patch"},
		{body: `{"decision":"modify","data":null}`, err: "neither data nor patch"},
		{body: `{"decision":"modify","data":"text"}`, err: "not a JSON object"},
		{body: `{"decision":"modify","data":[1]}`, err: "not a JSON object"},
		{body: `{"decision":"modify","patch":{}}`, err: "cannot unmarshal"},
		{body: `{"decision":"modify","patch":[{"op":"frob","path":"/a"}]}`, err: "unknown op"},
		{body: `{"decision":"modify","patch":[{"op":"add","path":"/a"}]}`, err: "no value"},
		{body: `{"decision":"modify","patch":[{"op":"replace","path":"a","value":1}]}`, err: "not a JSON Pointer"},
		{body: `{"decision":"modify","patch":[{"op":"remove","path":"/a~2"}]}`, err: "bad escape"},
		{body: `{"decision":"modify","patch":[{"op":"copy","from":"x","path":"/a"}]}`, err: "from:"},
		{body: `{"decision":"allow","patch":[]}`, err: "allow carries a patch"},
		{body: `{"decision":"deny","data":{"a":1}}`, err: "deny carries data"},
		{body: `{"decision":"mock"}`, err: "no tool result"},
		{body: `{"decision":"mock","data":"42"}`, err: "not a JSON object"},
		{body: `{"decision":"mock","data":{"content":42}}`, err: "not a tool result"},
		{body: `{"decision":"mock","data":{"content":"x"},"patch":[]}`, err: "mock carries a patch"},
		{body: `{"decision":"continue"}`, err: "no message"},
	} {
		d, err := ParseDecision([]byte(tc.body))
		if tc.err != "" {
			if !errors.Is(err, ErrBadReply) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseDecision(%s) = %+v, %v; want ErrBadReply saying %q", tc.body, d, err, tc.err)
			}
			continue
		}
		if err != nil || d.Kind != tc.kind {
			t.Errorf("ParseDecision(%s) = %+v, %v; want %s", tc.body, d, err, tc.kind)
		}
	}
}

func TestParseDecisionFields(t *testing.T) {
	d, err := ParseDecision([]byte(`{"decision":"modify","patch":[{"op":"add","path":"/a","value":null}],
		"reason":"r","context":"c","warnings":["w1","w2"],"annotations":{"k":"v"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Decision{Kind: Modify, Patch: []PatchOp{{Op: "add", Path: "/a", Value: json.RawMessage("null")}},
		Reason: "r", Context: "c", Warnings: []string{"w1", "w2"}, Annotations: map[string]string{"k": "v"}}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("got %+v\nwant %+v", d, want)
	}
	// Marshalled back, it is the same reply.
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"decision":"modify","patch":[{"op":"add","path":"/a","value":null}],"reason":"r","context":"c","warnings":["w1","w2"],"annotations":{"k":"v"}}` {
		t.Fatalf("marshalled %s", got)
	}
}

func TestDecisionValidateStages(t *testing.T) {
	table := map[events.Stage][]Kind{
		events.StageIntake:           {Allow, Modify, Deny},
		events.StageStepStarted:      {Allow, Stop},
		events.StageContextAssembled: {Allow, Modify, Deny, Stop},
		events.StageModelResponded:   {Allow, Modify, Deny, Stop},
		events.StageToolBefore:       {Allow, Modify, Deny, Mock, Stop, Ask},
		events.StageToolAfter:        {Allow, Modify},
		events.StageSubagentBefore:   {Allow, Modify, Deny},
		events.StageStop:             {Allow, Stop, Continue},
	}
	valid := map[Kind]*Decision{
		Allow:    {Kind: Allow},
		Modify:   {Kind: Modify, Data: json.RawMessage(`{}`)},
		Deny:     {Kind: Deny, Reason: "no"},
		Mock:     Mocked("x", false),
		Stop:     {Kind: Stop},
		Ask:      {Kind: Ask},
		Continue: {Kind: Continue, Context: "more"},
	}
	for _, stage := range events.Stages() {
		accepted := table[stage]
		if got := StageKinds(stage); !reflect.DeepEqual(got, accepted) && (len(got) != 0 || len(accepted) != 0) {
			t.Errorf("StageKinds(%s) = %v, want %v", stage, got, accepted)
		}
		for kind, d := range valid {
			err := d.Validate(stage)
			want := false
			for _, k := range accepted {
				want = want || k == kind
			}
			if want && err != nil {
				t.Errorf("%s on %s: %v", kind, stage, err)
			}
			if !want && !errors.Is(err, ErrBadReply) {
				t.Errorf("%s on %s accepted, want ErrBadReply", kind, stage)
			}
		}
	}
	err := (&Decision{Kind: Allow}).Validate(events.StageRunStarted)
	if err == nil || !strings.Contains(err.Error(), "observe-only") {
		t.Errorf("allow on run.started: %v", err)
	}
	err = (&Decision{Kind: Mock, Data: json.RawMessage(`{"content":"x"}`)}).Validate(events.StageIntake)
	if err == nil || !strings.Contains(err.Error(), "stage intake does not accept mock (accepts allow, modify, deny)") {
		t.Errorf("mock on intake: %v", err)
	}
}

func TestDecisionValidateContext(t *testing.T) {
	for _, tc := range []struct {
		d     Decision
		stage events.Stage
		ok    bool
	}{
		{Decision{Kind: Allow, Context: "c"}, events.StageToolAfter, true},
		{Decision{Kind: Modify, Data: json.RawMessage(`{}`), Context: "c"}, events.StageToolAfter, true},
		{Decision{Kind: Continue, Context: "c"}, events.StageStop, true},
		{Decision{Kind: Allow, Context: "c"}, events.StageToolBefore, false},
		{Decision{Kind: Deny, Context: "c"}, events.StageIntake, false},
		{Decision{Kind: Stop, Context: "c"}, events.StageStop, false},
	} {
		err := tc.d.Validate(tc.stage)
		if (err == nil) != tc.ok {
			t.Errorf("%s with context on %s: %v, want ok=%v", tc.d.Kind, tc.stage, err, tc.ok)
		}
	}
}

func TestDecisionHelpers(t *testing.T) {
	d, err := Replace(events.Intake{Prompt: "p"})
	if err != nil || d.Kind != Modify || string(d.Data) != `{"prompt":"p"}` {
		t.Fatalf("Replace: %+v %v", d, err)
	}
	if _, err := Replace(func() {}); err == nil {
		t.Fatal("Replace of a func: no error")
	}
	m := Mocked("out", true)
	if m.Kind != Mock || string(m.Data) != `{"content":"out","is_error":true}` || m.Validate(events.StageToolBefore) != nil {
		t.Fatalf("Mocked: %+v", m)
	}
	for k, ends := range map[Kind]bool{Allow: false, Modify: false, Deny: true, Mock: true, Stop: true, Ask: true, Continue: true, "x": false} {
		if k.Ends() != ends {
			t.Errorf("%s.Ends() = %v", k, !ends)
		}
	}
}

func FuzzParseDecision(f *testing.F) {
	for _, s := range []string{
		``, `{"decision":"allow"}`, `{"decision":"deny","reason":"no"}`,
		`{"decision":"modify","data":{"prompt":"x"}}`,
		`{"decision":"modify","patch":[{"op":"replace","path":"/prompt","value":"x"}]}`,
		`{"decision":"modify","patch":[]}`,
		`{"decision":"mock","data":{"content":"42","is_error":true}}`,
		`{"decision":"continue","context":"more"}`, `{"decision":"x"}`, `null`, `[`,
		`{"decision":"allow","warnings":["a"],"annotations":{"k":"v"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := ParseDecision(body)
		if err != nil {
			if !errors.Is(err, ErrBadReply) {
				t.Fatalf("error %v does not wrap ErrBadReply", err)
			}
			return
		}
		// A decision that parsed marshals to a reply that parses to the same.
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("marshal %+v: %v", d, err)
		}
		d2, err := ParseDecision(b)
		if err != nil {
			t.Fatalf("re-parse of %s (from %q): %v", b, body, err)
		}
		b2, _ := json.Marshal(d2)
		if string(b) != string(b2) {
			t.Fatalf("round trip changed the reply:\n%s\n%s", b, b2)
		}
		for _, stage := range events.Stages() {
			_ = d.Validate(stage) // must not panic
		}
	})
}

// The Kind constants are events' decision names, one each.
func TestKindsAreEventsDecisions(t *testing.T) {
	all := []Kind{Allow, Modify, Deny, Mock, Stop, Ask, Continue}
	var union events.Decisions
	for _, k := range all {
		b := events.DecisionNamed(string(k))
		if b == 0 || union&b != 0 {
			t.Errorf("kind %q is not one distinct events decision", k)
		}
		union |= b
	}
	if union != events.AllDecisions {
		t.Errorf("kinds cover %q, want %q", union, events.AllDecisions)
	}
}
