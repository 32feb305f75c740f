package prompt_test

import (
	"errors"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/prompt"
	"github.com/hookbus/hookbus/interceptors"
)

func TestParseVerdict(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       prompt.Verdict
	}{
		{"bare", `{"ok": true}`, prompt.Verdict{OK: true}},
		{"deny", `{"ok": false, "reason": "rm -rf outside the build dir"}`, prompt.Verdict{Reason: "rm -rf outside the build dir"}},
		{"fenced", "```json\n{\"ok\": false, \"reason\": \"no\"}\n```", prompt.Verdict{Reason: "no"}},
		{"text around", "Let me think. The command only lists files.\n{\"ok\":true,\"reason\":\"read-only\"}\nDone.", prompt.Verdict{OK: true, Reason: "read-only"}},
		{"other objects first", `The input was {"command":"ls"}. Verdict: {"ok": true}`, prompt.Verdict{OK: true}},
		{"same verdict twice", "{\"ok\": true}\n```json\n{\"ok\": true}\n```", prompt.Verdict{OK: true}},
		{"null reason", `{"ok": true, "reason": null}`, prompt.Verdict{OK: true}},
		{"impossible", `{"ok": false, "reason": "no network", "impossible": true}`, prompt.Verdict{Reason: "no network", Impossible: true}},
		{"extra fields", `{"ok": false, "reason": "x", "confidence": 0.9}`, prompt.Verdict{Reason: "x"}},
		{"stray brace first", `a { b {"ok": true}`, prompt.Verdict{OK: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := prompt.ParseVerdict(tc.text)
			if err != nil || got != tc.want {
				t.Fatalf("ParseVerdict(%q) = %+v, %v; want %+v", tc.text, got, err, tc.want)
			}
		})
	}
}

func TestParseVerdictRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"empty", ""},
		{"prose", "Yes, that looks fine to me."},
		{"allow word", "ALLOW"},
		{"no ok field", `{"decision": "approve", "reason": "fine"}`},
		{"ok nested only", `{"result": {"ok": true}}`},
		{"ok a string", `{"ok": "true"}`},
		{"reason a number", `{"ok": false, "reason": 3}`},
		{"disagree", `{"ok": true} or maybe {"ok": false, "reason": "hm"}`},
		{"truncated", `{"ok": tr`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := prompt.ParseVerdict(tc.text)
			if !errors.Is(err, prompt.ErrNoVerdict) {
				t.Fatalf("ParseVerdict(%q) = %+v, %v; want ErrNoVerdict", tc.text, got, err)
			}
		})
	}
}

func TestVerdictDecisionPerStage(t *testing.T) {
	no := prompt.Verdict{Reason: "tests are failing"}
	for _, tc := range []struct {
		stage  events.Stage
		v      prompt.Verdict
		kind   interceptors.Kind
		reason string
	}{
		{events.StageToolBefore, prompt.Verdict{OK: true, Reason: "fine"}, interceptors.Allow, "fine"},
		{events.StageToolBefore, no, interceptors.Deny, "tests are failing"},
		{events.StageIntake, no, interceptors.Deny, "tests are failing"},
		{events.StageSubagentBefore, no, interceptors.Deny, "tests are failing"},
		{events.StageContextAssembled, no, interceptors.Deny, "tests are failing"},
		{events.StageStop, no, interceptors.Continue, "tests are failing"},
		{events.StageStop, prompt.Verdict{}, interceptors.Continue, prompt.NotMet},
		{events.StageStop, prompt.Verdict{Reason: "cannot reach the network", Impossible: true}, interceptors.Allow, "cannot reach the network"},
		{events.StageToolAfter, no, interceptors.Allow, "tests are failing"},
		{events.StageStepStarted, no, interceptors.Stop, "tests are failing"},
	} {
		d, err := tc.v.Decision(tc.stage)
		if err != nil || d.Kind != tc.kind || d.Reason != tc.reason {
			t.Errorf("%+v on %s = %+v, %v; want %s %q", tc.v, tc.stage, d, err, tc.kind, tc.reason)
			continue
		}
		if tc.stage == events.StageToolAfter && d.Context != tc.reason {
			t.Errorf("%+v on %s: context %q, want the reason for the model", tc.v, tc.stage, d.Context)
		}
		if err := d.Validate(tc.stage); err != nil {
			t.Errorf("%+v on %s: the decision does not validate: %v", tc.v, tc.stage, err)
		}
	}
	if _, err := no.Decision(events.StageRunCompleted); !errors.Is(err, interceptors.ErrBadReply) {
		t.Errorf("a verdict on an observe-only stage = %v, want ErrBadReply", err)
	}
}
