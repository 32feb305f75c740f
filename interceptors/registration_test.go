package interceptors

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

func TestRegistrationValidate(t *testing.T) {
	ok := Registration{Plugin: "pii", Stage: events.StageToolAfter}
	for _, tc := range []struct {
		name string
		edit func(*Registration)
		err  string // "" = valid
	}{
		{"minimal", func(*Registration) {}, ""},
		{"full", func(r *Registration) {
			*r = Registration{Plugin: "pii", Stage: events.StageToolBefore, Order: -3, Timeout: MaxTimeout,
				Policy: PolicyFail, Mode: ModeValidate, Tools: "fs_*|bash", Agents: "support-?", Builtin: true}
		}, ""},
		{"every interceptable stage", func(r *Registration) { r.Stage = events.StageStop }, ""},
		{"empty plugin", func(r *Registration) { r.Plugin = "" }, "plugin id is empty"},
		{"plugin with dot", func(r *Registration) { r.Plugin = "a.b" }, `plugin id "a.b" contains '.'`},
		{"plugin with space", func(r *Registration) { r.Plugin = "a b" }, "whitespace"},
		{"unknown stage", func(r *Registration) { r.Stage = "tool.maybe" }, `stage "tool.maybe" is not a hookbus stage`},
		{"observe-only stage", func(r *Registration) { r.Stage = events.StageRunCompleted }, "observe-only"},
		{"negative timeout", func(r *Registration) { r.Timeout = -time.Second }, "timeout -1s is negative"},
		{"timeout over cap", func(r *Registration) { r.Timeout = 31 * time.Second }, "timeout 31s exceeds the 30s cap"},
		{"bad policy", func(r *Registration) { r.Policy = "retry" }, `policy "retry"`},
		{"bad mode", func(r *Registration) { r.Mode = "observe" }, `mode "observe"`},
		{"validate without deny", func(r *Registration) { r.Mode = ModeValidate }, "mode validate needs a stage that accepts deny (tool.after accepts allow, modify)"},
		{"tools off tool stages", func(r *Registration) { r.Stage, r.Tools = events.StageIntake, "bash" }, "tools matcher \"bash\" applies only on tool.before, tool.after and subagent.before"},
		{"tools on subagent.before", func(r *Registration) { r.Stage, r.Tools = events.StageSubagentBefore, "helper" }, ""},
		{"tools regexp", func(r *Registration) { r.Tools = "re:^mcp__.*__write" }, ""},
		{"bad tools regexp", func(r *Registration) { r.Tools = "re:(?!Bash)" }, "tools: matcher \"re:(?!Bash)\": error parsing regexp"},
		{"empty tools regexp", func(r *Registration) { r.Tools = "re:" }, "empty regular expression"},
		{"agents regexp", func(r *Registration) { r.Agents = "re:support-(eu|us)" }, ""},
		{"uncapped timeout", func(r *Registration) { r.Timeout, r.Uncapped = 10*time.Minute, true }, ""},
		{"bad tools glob", func(r *Registration) { r.Tools = "fs_[" }, "tools: glob \"fs_[\""},
		{"empty alternative", func(r *Registration) { r.Tools = "a||b" }, "empty alternative"},
		{"bad agents glob", func(r *Registration) { r.Agents = "[z-" }, "agents: glob"},
	} {
		r := ok
		tc.edit(&r)
		err := r.Validate()
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidRegistration) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v; want ErrInvalidRegistration saying %q", tc.name, err, tc.err)
		}
	}
	if err := (Registration{Plugin: "a*", Stage: events.StageIntake}).Validate(); !errors.Is(err, events.ErrInvalidID) {
		t.Errorf("bad plugin id: %v does not wrap events.ErrInvalidID", err)
	}
}

func TestRegistrationJSON(t *testing.T) {
	r := Registration{Plugin: "pii", Stage: events.StageToolAfter, Order: 10, Timeout: 1500 * time.Millisecond,
		Policy: PolicyFail, Mode: ModeMutate, Tools: "fetch_*", Agents: "support-*", Builtin: true, Remote: true}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"plugin":"pii","stage":"tool.after","order":10,"policy":"fail","mode":"mutate","tools":"fetch_*","agents":"support-*","builtin":true,"remote":true,"timeout":"1.5s"}`
	if string(b) != want {
		t.Fatalf("marshal:\n%s\nwant\n%s", b, want)
	}
	var back Registration
	if err := json.Unmarshal(b, &back); err != nil || back != r {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	// Zero fields are left out; pointers marshal the same.
	b, _ = json.Marshal(&Registration{Plugin: "p", Stage: events.StageIntake})
	if string(b) != `{"plugin":"p","stage":"intake"}` {
		t.Fatalf("minimal: %s", b)
	}
	for _, bad := range []string{`{"plugin":"p","timeout":"5"}`, `{"plugin":"p","timeout":5}`, `{"plugin":1}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("Unmarshal(%s): no error", bad)
		}
	}
	err = json.Unmarshal([]byte(`{"plugin":"p","timeout":"5"}`), &back)
	if !errors.Is(err, ErrInvalidRegistration) || !strings.Contains(err.Error(), "timeout \"5\" is not a Go duration") {
		t.Errorf("bad timeout: %v", err)
	}
}

func TestRegistrationWithDefaults(t *testing.T) {
	r := Registration{Plugin: "p", Stage: events.StageIntake}.WithDefaults()
	if r.Timeout != DefaultTimeout || r.Policy != PolicyIgnore || r.Mode != ModeMutate {
		t.Fatalf("defaults: %+v", r)
	}
	set := Registration{Plugin: "p", Stage: events.StageIntake, Timeout: time.Second, Policy: PolicyFail, Mode: ModeValidate}
	if set.WithDefaults() != set {
		t.Fatalf("WithDefaults changed set fields: %+v", set.WithDefaults())
	}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		tools, agents, tool, agent string
		want                       bool
	}{
		{"", "", "anything", "anyone", true},
		{"", "", "", "", true},
		{"bash", "", "bash", "a", true},
		{"bash", "", "bash2", "a", false},
		{"fs_*", "", "fs_read", "a", true},
		{"fs_*", "", "fs_", "a", true},
		{"fs_*", "", "fs", "a", false},
		{"fs_*|bash", "", "bash", "a", true},
		{"fs_*|bash", "", "edit", "a", false},
		{"fs_?", "", "fs_ab", "a", false},
		{"[a-c]*", "", "bash", "a", true},
		{"[a-c]*", "", "dash", "a", false},
		{"*", "", "", "a", true},
		{"bash", "", "", "a", false},
		{"", "support-*", "x", "support-eu", true},
		{"", "support-*", "x", "sales", false},
		{"bash", "ops-*", "bash", "ops-1", true},
		{"bash", "ops-*", "bash", "dev-1", false},
		{"fs_[", "", "fs_[", "a", false}, // malformed: matches nothing
		// Regular expressions match anywhere in the name, as Claude Code's
		// (JavaScript's RegExp.test) do.
		{"re:Edit|Write", "", "Edit", "a", true},
		{"re:Edit|Write", "", "MultiEdit", "a", true},
		{"re:^(Edit|Write)$", "", "MultiEdit", "a", false},
		{"re:^Notebook", "", "NotebookEdit", "a", true},
		{"re:^Notebook", "", "ReadNotebook", "a", false},
		{"re:mcp__memory__.*", "", "mcp__memory__store", "a", true},
		{"re:mcp__memory__.*", "", "mcp__github__push", "a", false},
		{"re:.*", "", "", "a", true},
		{"", "re:^ops-[0-9]+$", "x", "ops-12", true},
		{"", "re:^ops-[0-9]+$", "x", "ops-1a", false},
		{"re:(?!x)", "", "x", "a", false}, // malformed: matches nothing
	} {
		r := Registration{Tools: tc.tools, Agents: tc.agents}
		if got := r.Matches(tc.tool, tc.agent); got != tc.want {
			t.Errorf("tools %q agents %q: Matches(%q, %q) = %v", tc.tools, tc.agents, tc.tool, tc.agent, got)
		}
	}
}

func TestValidateGlob(t *testing.T) {
	for glob, ok := range map[string]bool{
		"": true, "*": true, "a|b": true, "fs_*|[ab]?": true, `a\*`: true,
		"[": false, "a|": false, "|a": false, "a||b": false, "ok|[": false, `a\`: false,
	} {
		if err := validateGlob(glob); (err == nil) != ok {
			t.Errorf("validateGlob(%q) = %v, want ok=%v", glob, err, ok)
		}
	}
}

// The cap is lifted only in code: Uncapped has no JSON form, so a
// registration read from the registry cannot carry it.
func TestUncappedNotInJSON(t *testing.T) {
	r := Registration{Plugin: "cc", Stage: events.StageToolBefore, Timeout: 10 * time.Minute, Uncapped: true}
	if err := r.Validate(); err != nil {
		t.Fatalf("uncapped 10m: %v", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(string(b)), "uncapped") {
		t.Fatalf("JSON %s carries the cap lift", b)
	}
	var back Registration
	if err := json.Unmarshal([]byte(`{"plugin":"cc","stage":"tool.before","timeout":"10m","uncapped":true,"Uncapped":true}`), &back); err != nil {
		t.Fatal(err)
	}
	if back.Uncapped || !errors.Is(back.Validate(), ErrInvalidRegistration) {
		t.Fatalf("a registration from JSON lifted the cap: %+v", back)
	}
}

func TestGrants(t *testing.T) {
	g := NewGrants("a", "b")
	if !g.Privileged("a") || !g.Privileged("b") || g.Privileged("c") {
		t.Fatalf("grants %v", g)
	}
	var none Grants
	if none.Privileged("a") {
		t.Fatal("nil Grants grants")
	}
}
