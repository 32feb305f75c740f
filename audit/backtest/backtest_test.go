package backtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/audit/backtest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// e1 is the id of the tool.before the records name.
const e1 = "01KDYAK34R8M0000000000000G"

// record builds a run's events by hand, in stream order.
type record struct {
	t   *testing.T
	run string
	evs []*events.Event
}

func (r *record) add(st events.Stage, id, subject string, p any) *events.Event {
	r.t.Helper()
	if id == "" {
		id = events.NewID()
	}
	e, err := events.New(st, events.Meta{Source: "test", AgentID: "a", SessionID: "s", RunID: r.run, Step: 1, Seq: uint64(len(r.evs) + 1), ID: id, Subject: subject}, p)
	if err != nil {
		r.t.Fatal(err)
	}
	r.evs = append(r.evs, e)
	return e
}

// decided records plugin's decision on the event id, with a patch.
func (r *record) decided(id, plugin, decision, patch string) {
	r.t.Helper()
	d := events.HookDecided{Plugin: plugin, Stage: events.StageToolBefore, Decision: decision, EventID: id}
	if patch != "" {
		d.Patch = json.RawMessage(patch)
	}
	r.add(events.StageHookDecided, "", plugin, d)
}

func call(cmd string) events.ToolCall {
	return events.ToolCall{ID: "c1", Name: "Bash", Arguments: json.RawMessage(`{"cmd":"` + cmd + `"}`)}
}

// candidate is an in-process candidate that denies a command containing
// "rm" and notes the commands it was given.
func candidate(t *testing.T, seen *[]string) *interceptors.Chain {
	t.Helper()
	c := interceptors.NewChain(interceptors.WithTrust(interceptors.NewGrants("candidate")))
	_, err := c.Register(interceptors.Registration{Plugin: "candidate", Stage: events.StageToolBefore},
		interceptors.Func(func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			tb, err := events.Data[events.ToolBefore](req.Event)
			if err != nil {
				return nil, err
			}
			var args struct{ Cmd string }
			if err := json.Unmarshal(tb.Call.Arguments, &args); err != nil {
				return nil, err
			}
			*seen = append(*seen, args.Cmd)
			if strings.Contains(args.Cmd, "rm") {
				return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no rm"}, nil
			}
			return nil, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// When an interceptor after the candidate modified the event, the input
// the candidate saw is rebuilt from the call as the model asked for it
// (audit.Before) and the patches of the interceptors before it; without
// that record, or when the record does not give back the stored payload,
// the event is not sent.
func TestBacktestRebuildsTheCandidatesInput(t *testing.T) {
	patch := func(cmd string) string { // cmd is plain ASCII: Go's quoting is JSON's
		return fmt.Sprintf(`[{"op":"replace","path":"/call/arguments/cmd","value":%q}]`, cmd)
	}

	cases := []struct {
		name      string
		build     func(r *record)
		seen      []string // the commands the candidate was given
		sent, not int
		recorded  string // the decision recorded for the candidate
		differ    bool
	}{
		{"candidate first, a later hook rewrote the call", func(r *record) {
			r.add(events.StageModelResponded, "", "", events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{call("rm -rf /tmp/x")}}})
			r.decided(e1, "candidate", "allow", "")
			r.decided(e1, "sanitizer", "modify", patch("ls"))
			r.add(events.StageToolBefore, e1, "Bash", events.ToolBefore{Call: call("ls")})
		}, []string{"rm -rf /tmp/x"}, 1, 0, "allow", true},
		{"a hook before the candidate and the candidate rewrote the call", func(r *record) {
			r.add(events.StageModelResponded, "", "", events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{call("rm -rf /")}}})
			r.decided(e1, "widen", "modify", patch("rm -rf /home"))
			r.decided(e1, "candidate", "modify", patch("echo no"))
			r.add(events.StageToolBefore, e1, "Bash", events.ToolBefore{Call: call("echo no")})
		}, []string{"rm -rf /home"}, 1, 0, "modify", true},
		{"the model's reply is not recorded", func(r *record) {
			r.decided(e1, "candidate", "allow", "")
			r.decided(e1, "sanitizer", "modify", patch("ls"))
			r.add(events.StageToolBefore, e1, "Bash", events.ToolBefore{Call: call("ls")})
		}, nil, 0, 1, "", false},
		{"the patches do not give back the stored call", func(r *record) {
			r.add(events.StageModelResponded, "", "", events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{call("rm -rf /tmp/x")}}})
			r.decided(e1, "candidate", "allow", "")
			r.decided(e1, "sanitizer", "modify", patch("ls"))
			r.add(events.StageToolBefore, e1, "Bash", events.ToolBefore{Call: call("pwd")})
		}, nil, 0, 1, "", false},
		{"nobody after the candidate modified: the stored event", func(r *record) {
			r.decided(e1, "widen", "modify", patch("rm x"))
			r.decided(e1, "candidate", "allow", "")
			r.add(events.StageToolBefore, e1, "Bash", events.ToolBefore{Call: call("rm x")})
		}, []string{"rm x"}, 1, 0, "allow", true},
		{"another run's reply with the same call id is not taken", func(r *record) {
			other := &record{t: r.t, run: "other"}
			other.add(events.StageModelResponded, "", "", events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{call("rm -rf /")}}})
			r.evs = append(r.evs, other.evs...)
			r.decided(e1, "candidate", "allow", "")
			r.decided(e1, "sanitizer", "modify", patch("ls"))
			r.add(events.StageToolBefore, e1, "Bash", events.ToolBefore{Call: call("ls")})
		}, nil, 0, 1, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &record{t: t, run: "r1"}
			tc.build(r)
			var seen []string
			bt := backtest.New(events.StageToolBefore, "candidate", candidate(t, &seen))
			for _, e := range r.evs {
				if !slices.Contains(bt.Stages(), e.Stage) {
					t.Fatalf("the backtest does not read %s", e.Stage)
				}
				if err := bt.Add(context.Background(), e); err != nil {
					t.Fatal(err)
				}
			}
			rep := bt.Report()
			if !slices.Equal(seen, tc.seen) || rep.Scanned != 1 || rep.Sent != tc.sent || rep.NotReconstructible != tc.not || (rep.Differ == 1) != tc.differ {
				t.Fatalf("candidate saw %q; report %+v", seen, rep)
			}
			if tc.differ && (rep.Differences[0].Recorded != tc.recorded || rep.Differences[0].Candidate != "deny" || rep.Differences[0].EventID != e1) {
				t.Fatalf("difference %+v", rep.Differences[0])
			}
		})
	}
}

// What counts as recorded for the candidate: its own decision when it was
// called (a skip is not a call), else the decision that ended the chain,
// deny for a failure that failed closed, else allow. Shadow records are
// never counted.
func TestBacktestComparesWithWhatWasRecorded(t *testing.T) {
	cases := []struct {
		name     string
		recs     []any // events.HookDecided or events.HookFailed, in call order
		recorded string
	}{
		{"candidate's own", []any{events.HookDecided{Plugin: "guard", Decision: "deny"}, events.HookDecided{Plugin: "candidate", Decision: "mock"}}, "mock"},
		{"a skip is not a call", []any{events.HookDecided{Plugin: "candidate", Decision: "skipped"}, events.HookDecided{Plugin: "guard", Decision: "ask"}}, "ask"},
		{"the chain's end", []any{events.HookDecided{Plugin: "guard", Decision: "allow"}, events.HookDecided{Plugin: "stopper", Decision: "stop"}}, "stop"},
		{"failed closed", []any{events.HookFailed{Plugin: "guard", Kind: "timeout", Policy: "fail", Outcome: interceptors.FailedClosed}}, "deny"},
		{"failed open", []any{events.HookFailed{Plugin: "guard", Kind: "timeout", Policy: "ignore", Outcome: "failed_open"}}, "allow"},
		{"the candidate failed", []any{events.HookFailed{Plugin: "candidate", Kind: "timeout", Policy: "ignore", Outcome: "failed_open"}}, "failed:timeout"},
		{"shadow records", []any{events.HookDecided{Plugin: "candidate", Decision: "deny", Shadow: true},
			events.HookFailed{Plugin: "guard", Kind: "error", Outcome: interceptors.OutcomeShadow}}, "allow"},
		{"none", nil, "allow"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &record{t: t, run: "r1"}
			for _, p := range tc.recs {
				switch p := p.(type) {
				case events.HookDecided:
					p.Stage, p.EventID = events.StageToolBefore, e1
					r.add(events.StageHookDecided, "", p.Plugin, p)
				case events.HookFailed:
					p.Stage, p.EventID = events.StageToolBefore, e1
					r.add(events.StageHookFailed, "", p.Plugin, p)
				}
			}
			r.add(events.StageToolBefore, e1, "Bash", events.ToolBefore{Call: call("rm x")})
			var seen []string
			bt := backtest.New(events.StageToolBefore, "candidate", candidate(t, &seen))
			for _, e := range r.evs {
				if err := bt.Add(context.Background(), e); err != nil {
					t.Fatal(err)
				}
			}
			rep := bt.Report()
			want := 1
			if tc.recorded == "deny" {
				want = 0
			}
			if rep.Sent != 1 || rep.Differ != want || want == 1 && rep.Differences[0].Recorded != tc.recorded {
				t.Fatalf("report %+v, want recorded %s", rep, tc.recorded)
			}
		})
	}
}

// With Matching, the candidate is sent only the events its registration
// matches (tool, kind, agent); the others are not matched and never differ,
// whatever the chain decided on them.
func TestBacktestSendsOnlyMatchingEvents(t *testing.T) {
	r := &record{t: t, run: "r1"}
	shell := events.ToolCall{ID: "c1", Name: "run_shell_command", Arguments: json.RawMessage(`{"command":"rm -rf x","cmd":"rm -rf x"}`)}.WithAction(events.HarnessGemini)
	read := events.ToolCall{ID: "c2", Name: "Read", Arguments: json.RawMessage(`{"file_path":"rm.txt","cmd":"rm.txt"}`)}.WithAction(events.HarnessClaude)
	old := events.ToolCall{ID: "c3", Name: "Bash", Arguments: json.RawMessage(`{"cmd":"rm y"}`)} // recorded before actions
	r.add(events.StageToolBefore, "", shell.Name, events.ToolBefore{Call: shell})
	r.add(events.StageToolBefore, "", read.Name, events.ToolBefore{Call: read})
	r.add(events.StageToolBefore, "", old.Name, events.ToolBefore{Call: old})
	for _, tc := range []struct {
		reg        interceptors.Registration
		seen       []string
		notMatched int
		differ     int
	}{
		{interceptors.Registration{Kinds: "shell"}, []string{"rm -rf x"}, 2, 1},
		{interceptors.Registration{Tools: "Read|Bash"}, []string{"rm.txt", "rm y"}, 1, 2},
		{interceptors.Registration{Agents: "b"}, nil, 3, 0},
		{interceptors.Registration{}, []string{"rm -rf x", "rm.txt", "rm y"}, 0, 3},
	} {
		var seen []string
		var found []backtest.Difference
		bt := backtest.New(events.StageToolBefore, "candidate", candidate(t, &seen), backtest.Matching(tc.reg),
			backtest.OnDifference(func(d backtest.Difference) { found = append(found, d) }))
		for _, e := range r.evs {
			if err := bt.Add(context.Background(), e); err != nil {
				t.Fatal(err)
			}
		}
		rep := bt.Report()
		if !slices.Equal(found, rep.Differences) {
			t.Errorf("%+v: OnDifference was given %+v, the report lists %+v", tc.reg, found, rep.Differences)
		}
		if !slices.Equal(seen, tc.seen) || rep.NotMatched != tc.notMatched || rep.Differ != tc.differ || rep.Sent != len(tc.seen) || rep.Scanned != 3 {
			t.Errorf("%+v: seen %q, report %+v", tc.reg, seen, rep)
		}
	}
}

// A call the loop recorded with its action, rewritten by a hook after the
// candidate, is rebuilt with the action the candidate saw (from the model's
// call), not the one normalized again after the chain.
func TestBacktestRebuildsACallWithItsAction(t *testing.T) {
	r := &record{t: t, run: "r1"}
	asked := events.ToolCall{ID: "c1", Name: "Bash", Arguments: json.RawMessage(`{"command":"rm -rf /tmp/x"}`)}
	r.add(events.StageModelResponded, "", "", events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{asked}}})
	r.decided(e1, "candidate", "allow", "")
	r.decided(e1, "sanitizer", "modify", `[{"op":"replace","path":"/call/arguments/command","value":"ls"}]`)
	stored := events.ToolCall{ID: "c1", Name: "Bash", Arguments: json.RawMessage(`{"command":"ls"}`)}.WithAction(events.HarnessHookbus)
	r.add(events.StageToolBefore, e1, "Bash", events.ToolBefore{Call: stored})

	var seen []string
	c := interceptors.NewChain(interceptors.WithTrust(interceptors.NewGrants("candidate")))
	if _, err := c.Register(interceptors.Registration{Plugin: "candidate", Stage: events.StageToolBefore, Kinds: "shell"},
		interceptors.Func(func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			tb, err := events.Data[events.ToolBefore](req.Event)
			if err != nil {
				return nil, err
			}
			seen = append(seen, tb.Call.Action.Command)
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: "no rm -rf"}, nil
		})); err != nil {
		t.Fatal(err)
	}
	bt := backtest.New(events.StageToolBefore, "candidate", c, backtest.Matching(interceptors.Registration{Kinds: "shell"}))
	for _, e := range r.evs {
		if err := bt.Add(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	rep := bt.Report()
	if rep.Sent != 1 || rep.NotReconstructible != 0 || rep.Differ != 1 || !slices.Equal(seen, []string{"rm -rf /tmp/x"}) {
		t.Fatalf("report %+v, candidate saw %q", rep, seen)
	}
}
