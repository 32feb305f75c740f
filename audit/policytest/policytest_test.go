package policytest_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/hookbus/hookbus/audit/audittest"
	"github.com/hookbus/hookbus/audit/policytest"
	"github.com/hookbus/hookbus/policy"
)

// fleetPolicies are testdata/fleet.yaml's: no-destructive-shell (audit
// mode; an ask rule for git push; not for ci- agents), no-exfil (a
// web.fetch after a read of .env in the session), quiet-npm (warn mode;
// Claude Code only: rewrites npm install).
func fleetPolicies(t *testing.T) []*policy.Policy {
	t.Helper()
	src, err := os.ReadFile("testdata/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := policy.Parse("testdata/fleet.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// test runs a test of ps over audittest.Fleet.
func test(t *testing.T, ps []*policy.Policy, opts ...policytest.Option) *policytest.Report {
	t.Helper()
	pt, err := policytest.New(ps, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range audittest.Fleet(t) {
		if !slices.Contains(pt.Stages(), e.Stage) {
			continue
		}
		if err := pt.Add(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	return pt.Report()
}

// flip is what a test asserts of a flip: the policy, the kind, the
// call (its index in audittest.FleetCalls), the rule, and whether the
// policy as written would enforce it.
type flip struct {
	policy   string
	kind     policytest.FlipKind
	call     int
	rule     string
	enforced bool
}

func flipsOf(rep *policytest.Report) []flip {
	var out []flip
	for _, p := range rep.Policies {
		for _, f := range p.Flips {
			call := -1
			for i := range audittest.FleetCalls {
				if audittest.FleetEventID(i) == f.EventID {
					call = i
				}
			}
			out = append(out, flip{p.Name, f.Kind, call, f.Rule, f.Enforced})
		}
	}
	return out
}

// The recorded calls of all four harnesses replayed through three
// policies: exactly the calls each would change, how, with per agent and
// harness counts. The same rm -rf is denied in hookbus' agent, Gemini CLI
// and Codex CLI; a git push is sent to a person; the policy's earlier
// version's deny of rm -r is lifted; the call a guard denied already is no
// flip; a ci- agent's rm -rf is excluded by a match condition; a web.fetch
// after reading .env is denied in that session only; Claude Code's npm
// install is rewritten, Gemini CLI's is not (the policy matches Claude
// Code only).
func TestPolicyTestReportsTheFlipsExactly(t *testing.T) {
	rep := test(t, fleetPolicies(t))
	want := []flip{
		{"no-destructive-shell", policytest.FlipDenied, 1, "rm-rf", false},
		{"no-destructive-shell", policytest.FlipAsked, 2, "push", false},
		{"no-destructive-shell", policytest.FlipAllowed, 7, "", false},
		{"no-destructive-shell", policytest.FlipDenied, 8, "rm-rf", false},
		{"no-destructive-shell", policytest.FlipDenied, 12, "rm-rf", false},
		{"no-exfil", policytest.FlipDenied, 5, "env-then-network", true},
		{"quiet-npm", policytest.FlipRewritten, 6, "no-audit", false},
	}
	if got := flipsOf(rep); !slices.Equal(got, want) {
		t.Fatalf("flips\n%+v\nwant\n%+v", got, want)
	}
	if rep.Flips() != len(want) {
		t.Fatalf("Flips() = %d", rep.Flips())
	}

	shell := rep.Policies[0]
	f := shell.Flips[0]
	if f.Agent != "demo" || f.Harness != "hookbus" || f.Run != "01KFZHB0000000000000000001" || f.CallID != "call_2" || f.Tool != "Bash" ||
		f.Recorded != "allow" || f.Decision != "deny" || f.Message != "destructive shell command" || f.Action == nil || f.Action.Command != "rm -rf /tmp/build" {
		t.Fatalf("first flip %+v", f)
	}
	if f := shell.Flips[2]; f.Recorded != "deny" || f.RecordedBy != "policy-no-destructive-shell" || f.Decision != "allow" || f.Harness != "claude" {
		t.Fatalf("the lifted deny %+v", f)
	}
	// Per agent and harness: every shell call the policy applied to (not
	// the ci- agent's: its match condition leaves it out), and the flips
	// among them.
	wantCounts := []policytest.Count{
		{Agent: "claude-code", Harness: "claude", Calls: 2, Allowed: 1},
		{Agent: "codex-cli", Harness: "codex", Calls: 3, Denied: 1},
		{Agent: "demo", Harness: "hookbus", Calls: 3, Denied: 1, Asked: 1},
		{Agent: "gemini-cli", Harness: "gemini", Calls: 3, Denied: 1},
	}
	if !slices.Equal(shell.Counts, wantCounts) {
		t.Fatalf("counts\n%+v\nwant\n%+v", shell.Counts, wantCounts)
	}
	// Its match (kinds: shell) sends it the 12 shell calls, not the read
	// or the fetches; it applies to those not of a ci- agent.
	if shell.Calls != len(audittest.FleetCalls) || shell.Sent != 12 || shell.Matched != 11 || shell.Failed != 0 || shell.Mode != "audit" || shell.Rollout != 100 {
		t.Fatalf("no-destructive-shell report %+v", shell)
	}
	if npm := rep.Policies[2]; npm.Sent != 12 || npm.Matched != 1 || len(npm.Flips) != 1 || npm.Flips[0].Harness != "claude" {
		t.Fatalf("quiet-npm rewrites Claude Code's npm install only: %+v", npm)
	}
}

// With --agent and --harness globs, only those calls are tested.
func TestPolicyTestNarrowsToAgentsAndHarnesses(t *testing.T) {
	rep := test(t, fleetPolicies(t), policytest.Harnesses("gemini"))
	if got, want := flipsOf(rep), []flip{{"no-destructive-shell", policytest.FlipDenied, 8, "rm-rf", false}}; !slices.Equal(got, want) {
		t.Fatalf("gemini only: %+v", got)
	}
	rep = test(t, fleetPolicies(t), policytest.Agents("c*"))
	got := flipsOf(rep)
	want := []flip{
		{"no-destructive-shell", policytest.FlipAllowed, 7, "", false},
		{"no-destructive-shell", policytest.FlipDenied, 12, "rm-rf", false},
		{"no-exfil", policytest.FlipDenied, 5, "env-then-network", true},
		{"quiet-npm", policytest.FlipRewritten, 6, "no-audit", false},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("agents c*: %+v", got)
	}
	if _, err := policytest.New(fleetPolicies(t), policytest.Agents("[")); err == nil {
		t.Fatal("a bad glob is accepted")
	}
}

// A policy enforced in part of the sessions is tested in all of them; each
// flip says whether the policy as written enforces it in its session (its
// rollout, stable per session), and an audit or warn policy enforces none.
func TestPolicyTestSaysWhatTheRolloutEnforces(t *testing.T) {
	ps := fleetPolicies(t)
	shell := *ps[0]
	shell.Spec.Mode, shell.Spec.Rollout = policy.ModeEnforce, 50
	rep := test(t, []*policy.Policy{&shell})
	flips := rep.Policies[0].Flips
	if len(flips) != 5 {
		t.Fatalf("a partial rollout changes what is tested: %d flips", len(flips))
	}
	in, out := 0, 0
	for _, f := range flips {
		if f.Enforced != policy.InRollout(shell.Name, f.Session, 50) {
			t.Fatalf("flip in session %s says enforced %v", f.Session, f.Enforced)
		}
		if f.Enforced {
			in++
		} else {
			out++
		}
	}
	if in == 0 || out == 0 {
		t.Fatalf("%d flips enforced, %d outside the rollout: the sessions should fall on both sides", in, out)
	}
	for _, f := range test(t, ps).Policies[0].Flips {
		if f.Enforced {
			t.Fatalf("an audit policy enforces %+v", f)
		}
	}
}

// A counter's window runs on the recorded time of the calls replayed, not
// the wall clock: hookbus' agent made its three shell calls 3 seconds
// apart, so a limit of 2 in 4 seconds never holds it back, while a limit
// of 2 an hour denies the third (the replay itself takes no time at all).
func TestPolicyTestCountsOnRecordedTime(t *testing.T) {
	limit := func(window string) []*policy.Policy {
		src := `name: rate
match: {agents: [demo], kinds: [shell]}
counters:
- name: shell
  key: agent
  window: ` + window + `
validations:
- name: at-most-2
  expression: counters.shell < 2.0
  message: too many shell calls
`
		ps, err := policy.Parse("rate.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	if got := flipsOf(test(t, limit("4s"))); len(got) != 0 {
		t.Fatalf("a 4s window: %+v", got)
	}
	if got, want := flipsOf(test(t, limit("1h"))), []flip{{"rate", policytest.FlipDenied, 2, "at-most-2", true}}; !slices.Equal(got, want) {
		t.Fatalf("a 1h window: %+v, want %+v", got, want)
	}
}
