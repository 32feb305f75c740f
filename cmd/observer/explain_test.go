package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/audit/audittest"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
)

// publishFleet stores audittest.Fleet's history on b, each event as
// recorded; extra events (the hit of a policy) go before the tool.before
// whose id they name.
func publishFleet(t *testing.T, b *bus.Bus, extra ...*events.Event) {
	t.Helper()
	ctx := context.Background()
	for _, e := range audittest.Fleet(t) {
		for _, x := range extra {
			var d struct {
				EventID string `json:"event_id"`
			}
			if json.Unmarshal(x.Data, &d) == nil && d.EventID == e.ID {
				if err := b.PublishSync(ctx, x); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := b.PublishSync(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
}

// observer explain prints each call of a run with the interceptors and
// policies that decided it, in order: a policy's rule with its
// expression and the values it saw, as text and as JSON; with CALL, that
// call only.
func TestExplainPrintsPolicyHits(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	const run = "01KFZHB0000000000000000001"
	hit, err := events.New(events.StageHookDecided, events.Meta{Source: "hookbus/loop", AgentID: "demo", SessionID: "hb-1", RunID: run, Step: 2, Subject: "policy-no-rm"},
		events.HookDecided{Plugin: "policy-no-rm", Stage: events.StageToolBefore, Decision: "deny", Reason: "destructive shell command (policy no-rm)", LatencyUS: 18,
			EventID: audittest.FleetEventID(1), Policy: &events.PolicyHit{Name: "no-rm", Version: "sha256:0123456789abcdef", Rule: "rm-rf", Mode: "enforce",
				Action: "deny", Message: "destructive shell command", Expression: `!action.command.matches("rm\\s+-rf")`,
				Values: map[string]string{"action.command": `"rm -rf /tmp/build"`}, Enforced: true}})
	if err != nil {
		t.Fatal(err)
	}
	publishFleet(t, b, hit)

	code, out, errOut := observe(t, "explain", run[:12], "--nats", srv.ClientURL())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"run " + run + "  demo/hb-1: 3 calls",
		`Bash (call call_2)  shell "rm -rf /tmp/build"`,
		`1. policy-no-rm  deny "destructive shell command (policy no-rm)"  (18µs, in-process)`,
		"policy no-rm sha256:0123456789abcdef  rule rm-rf  mode enforce (enforced)  deny",
		`expression: !action.command.matches("rm\\s+-rf")`,
		`action.command = "rm -rf /tmp/build"`,
		"=> deny (policy-no-rm)",
		"no interceptor or policy matched",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("the text does not say %q:\n%s", want, out)
		}
	}

	code, out, errOut = observe(t, "explain", run, "call_2", "-o", "json", "--nats", srv.ClientURL())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v explainView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(v.Calls) != 1 || v.Calls[0].CallID != "call_2" || v.Calls[0].Outcome != "deny" || len(v.Calls[0].Hooks) != 1 ||
		v.Calls[0].Hooks[0].Policy == nil || v.Calls[0].Hooks[0].Policy.Values["action.command"] != `"rm -rf /tmp/build"` {
		t.Fatalf("json: %s", out)
	}
	if code, _, errOut := observe(t, "explain", run, "call_9", "--nats", srv.ClientURL()); code == exitOK || !strings.Contains(errOut, `holds no call or event "call_9"`) {
		t.Fatalf("an unknown call: exit %d %s", code, errOut)
	}
}
