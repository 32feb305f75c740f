package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
)

func TestValidateID(t *testing.T) {
	cases := []struct {
		id   string
		ok   bool
		want string
	}{
		{"agent-1", true, ""},
		{"01JD0000000000000000000000", true, ""},
		{"ünïcode_ok", true, ""},
		{"", false, "empty"},
		{"a.b", false, "'.'"},
		{"a*", false, "'*'"},
		{"a>", false, "'>'"},
		{"a b", false, "whitespace"},
		{"a\tb", false, "whitespace"},
		{"a\x00b", false, "control"},
		{strings.Repeat("x", 129), false, "129 bytes"},
		{strings.Repeat("x", 128), true, ""},
	}
	for _, tc := range cases {
		err := events.ValidateID("agent", tc.id)
		if tc.ok {
			if err != nil {
				t.Errorf("ValidateID(%q) = %v, want ok", tc.id, err)
			}
			continue
		}
		if !errors.Is(err, events.ErrInvalidID) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalidID", tc.id, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "agent id") {
			t.Errorf("ValidateID(%q) error %q should name the id kind and mention %q", tc.id, err, tc.want)
		}
	}
}

func TestSubjectsEventRoundTrip(t *testing.T) {
	for _, prefix := range []string{"", "hookbus", "acme.hooks"} {
		s, err := events.NewSubjects(prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range events.Stages() {
			subj, err := s.Event("agent-1", "sess-1", st)
			if err != nil {
				t.Fatalf("Event(%s): %v", st, err)
			}
			a, se, got, err := s.ParseEvent(subj)
			if err != nil || a != "agent-1" || se != "sess-1" || got != st {
				t.Fatalf("ParseEvent(%q) = %q %q %q %v", subj, a, se, got, err)
			}
			hs, err := s.Hook(st, "pii")
			if err != nil {
				t.Fatal(err)
			}
			gst, plugin, err := s.ParseHook(hs)
			if err != nil || gst != st || plugin != "pii" {
				t.Fatalf("ParseHook(%q) = %q %q %v", hs, gst, plugin, err)
			}
		}
	}
}

func TestSubjectsRejectBadInput(t *testing.T) {
	var s events.Subjects
	if got, _ := s.Event("a", "s", events.StageToolBefore); got != "hookbus.evt.a.s.tool.before" {
		t.Fatalf("zero Subjects uses %q", got)
	}
	if _, err := s.Event("a.b", "s", events.StageStop); !errors.Is(err, events.ErrInvalidID) {
		t.Fatalf("Event with dotted agent: %v", err)
	}
	if _, err := s.Event("a", "s", "nope"); !errors.Is(err, events.ErrUnknownStage) {
		t.Fatalf("Event with unknown stage: %v", err)
	}
	if _, err := s.Hook(events.StageToolBefore, "p*"); !errors.Is(err, events.ErrInvalidID) {
		t.Fatalf("Hook with wildcard plugin: %v", err)
	}
	if _, err := events.NewSubjects("a.>"); !errors.Is(err, events.ErrInvalidID) {
		t.Fatalf("NewSubjects with wildcard: %v", err)
	}
	for _, bad := range []string{"other.evt.a.s.stop", "hookbus.evt.a.s", "hookbus.evt.a.s.tool.sideways", "hookbus.evt.a.s.tool.before.extra"} {
		if _, _, _, err := s.ParseEvent(bad); !errors.Is(err, events.ErrInvalidSubject) {
			t.Errorf("ParseEvent(%q) = %v, want ErrInvalidSubject", bad, err)
		}
	}
	if _, _, err := s.ParseHook("hookbus.hook.stop"); err == nil {
		t.Error("ParseHook without plugin accepted")
	}
}

func TestEventFilter(t *testing.T) {
	var s events.Subjects
	cases := []struct {
		agent, session string
		stage          events.Stage
		want           string
	}{
		{"", "", "", "hookbus.evt.*.*.>"},
		{"a", "", "", "hookbus.evt.a.*.>"},
		{"a", "s", events.StageToolAfter, "hookbus.evt.a.s.tool.after"},
		{"", "", events.StageIntake, "hookbus.evt.*.*.intake"},
	}
	for _, tc := range cases {
		got, err := s.EventFilter(tc.agent, tc.session, tc.stage)
		if err != nil || got != tc.want {
			t.Errorf("EventFilter(%q,%q,%q) = %q, %v; want %q", tc.agent, tc.session, tc.stage, got, err, tc.want)
		}
	}
}

func TestStages(t *testing.T) {
	seen := map[events.Stage]bool{}
	for _, st := range events.Stages() {
		if seen[st] {
			t.Fatalf("duplicate stage %s", st)
		}
		seen[st] = true
		if !st.Valid() {
			t.Fatalf("%s not valid", st)
		}
		got, err := events.StageFromType(st.Type())
		if err != nil || got != st {
			t.Fatalf("StageFromType(%q) = %q, %v", st.Type(), got, err)
		}
		if _, err := events.PayloadFor(st); err != nil {
			t.Fatalf("PayloadFor(%s): %v", st, err)
		}
	}
	if len(seen) != 25 {
		t.Fatalf("%d stages, want 25", len(seen))
	}
	for _, st := range []events.Stage{events.StageContextAssembled, events.StageModelResponded} {
		if !st.Privileged() || !st.Interceptable() {
			t.Errorf("%s should be privileged and interceptable", st)
		}
	}
	for _, st := range []events.Stage{events.StageRunCompleted, events.StageHookDecided, events.StageToolFailed, events.StageHarnessEvent} {
		if st.Interceptable() || st.Privileged() {
			t.Errorf("%s should be observe-only", st)
		}
	}
	if _, err := events.ParseStage("onIntake"); !errors.Is(err, events.ErrUnknownStage) {
		t.Errorf("ParseStage(onIntake) = %v", err)
	}
}

func TestRunRequestValidate(t *testing.T) {
	good := `{"run_id":"r1","agent_id":"a","session_id":"s","prompt":"hi"}`
	if _, err := events.DecodeRunRequest([]byte(good)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`{`, `{"run_id":"r.1","agent_id":"a","session_id":"s","prompt":"hi"}`,
		`{"run_id":"r1","agent_id":"a","session_id":"s","prompt":""}`,
		`{"run_id":"r1","agent_id":"a","session_id":"s s","prompt":"x"}`,
	} {
		if _, err := events.DecodeRunRequest([]byte(bad)); err == nil {
			t.Errorf("DecodeRunRequest(%s) accepted", bad)
		}
	}
}

func TestSummaryCoversEveryStage(t *testing.T) {
	for _, st := range events.Stages() {
		p, _ := events.PayloadFor(st)
		e, err := events.New(st, events.Meta{Source: "s", AgentID: "a", SessionID: "s", RunID: "r"}, p)
		if err != nil {
			t.Fatal(err)
		}
		if s := e.Summary(); strings.HasPrefix(s, "undecodable") {
			t.Errorf("%s: %s", st, s)
		}
	}
	e, _ := events.New(events.StageToolAfter, events.Meta{Source: "s", AgentID: "a", SessionID: "s", RunID: "r"},
		events.ToolAfter{Call: events.ToolCall{Name: "clock"}, Result: events.ToolResult{Content: "noon", Mocked: true}})
	if got := e.Summary(); got != `clock → "noon" [mocked]` {
		t.Errorf("Summary = %q", got)
	}
	e.Data = []byte(`{"call":1}`)
	if got := e.Summary(); !strings.HasPrefix(got, "undecodable") {
		t.Errorf("Summary of bad data = %q", got)
	}
}

func TestRunSubjectsPinnedToADefinition(t *testing.T) {
	s := events.Subjects{}
	d := strings.Repeat("ab", 32)
	subj, err := s.RunPinned("ops", d)
	if err != nil || subj != "hookbus.run.ops."+d {
		t.Fatalf("RunPinned = %q, %v", subj, err)
	}
	if f, err := s.RunsPinned("ops"); err != nil || f != "hookbus.run.ops.*" {
		t.Fatalf("RunsPinned = %q, %v", f, err)
	}
	for _, tc := range []struct{ subject, agent, digest string }{
		{"hookbus.run.ops", "ops", ""},
		{"hookbus.run.ops." + d, "ops", d},
	} {
		a, dg, err := s.ParseRun(tc.subject)
		if err != nil || a != tc.agent || dg != tc.digest {
			t.Errorf("ParseRun(%q) = %q, %q, %v", tc.subject, a, dg, err)
		}
	}
	for _, bad := range []string{"hookbus.run.ops.short", "hookbus.run.ops." + d + ".x", "hookbus.evt.ops", "hookbus.run."} {
		if _, _, err := s.ParseRun(bad); err == nil {
			t.Errorf("ParseRun(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"", "abc", strings.Repeat("AB", 32), strings.Repeat("g", 64), strings.Repeat("a", 65)} {
		if _, err := s.RunPinned("ops", bad); !errors.Is(err, events.ErrInvalidID) {
			t.Errorf("RunPinned(%q) = %v, want ErrInvalidID", bad, err)
		}
	}
	r := events.RunRequest{RunID: "r", AgentID: "ops", SessionID: "s", Resume: true, Definition: "nothex"}
	if err := r.Validate(); !errors.Is(err, events.ErrInvalidID) {
		t.Errorf("a request pinned to a bad digest: %v", err)
	}
	r.Definition = d
	if err := r.Validate(); err != nil {
		t.Errorf("a request pinned to %s: %v", d, err)
	}
	def := events.Definition{Digest: d, Name: "ops", Version: "2"}
	if def.String() != "ops v2 ("+d[:12]+")" || def.Short() != d[:12] || events.ShortDigest("") != "-" {
		t.Errorf("Definition strings: %q %q", def.String(), def.Short())
	}
}
