package bridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/record/approval"
)

const permInput = `, "tool_name": "Bash", "tool_input": {"command": "rm -rf build"}, "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "rm -rf build"}], "behavior": "allow", "destination": "localSettings"}]`

// answerWhenAsked records req's answer (as observer approve does) once
// the session has an approval.requested, and returns what it recorded.
func answerWhenAsked(t *testing.T, b *bus.Bus, session string, req approval.Request) <-chan *approval.Result {
	t.Helper()
	done := make(chan *approval.Result, 1)
	go func() {
		var asked *events.Event
		bustest.Eventually(t, 10*time.Second, func() bool {
			evs, err := b.SessionEvents(context.Background(), bridge.DefaultAgent, session)
			for _, e := range evs {
				if e.Stage == events.StageApprovalRequested {
					asked = e
				}
			}
			return err == nil && asked != nil
		})
		req.AgentID, req.SessionID, req.RunID = bridge.DefaultAgent, session, asked.RunID
		req.By = events.Actor{Identity: "alice", Writer: "alice", Channel: events.ChannelCLI}
		res, err := approval.Answer(context.Background(), approval.Deps{History: b, Recorder: b}, req)
		if err != nil {
			t.Errorf("answer: %v", err)
		}
		done <- res
	}()
	return done
}

// permission sends the PermissionRequest of the call PreToolUse recorded
// before, while answer records the person's answer.
func permission(t *testing.T, br *bridge.Bridge, b *bus.Bus, session string, answer approval.Request) map[string]any {
	t.Helper()
	handle(t, br, input(t, session, "UserPromptSubmit", `, "prompt": "clean"`))
	handle(t, br, input(t, session, "PreToolUse", `, "tool_name": "Bash", "tool_use_id": "toolu_9", "tool_input": {"command": "rm -rf build"}`))
	done := answerWhenAsked(t, b, session, answer)
	out := handle(t, br, input(t, session, "PermissionRequest", permInput))
	if res := <-done; res == nil || len(res.Resolved) != 1 || res.Resolved[0].CallID != "toolu_9" {
		t.Fatalf("answered %+v, want call toolu_9 (the PreToolUse's)", res)
	}
	return out
}

func decisionOf(t *testing.T, out map[string]any) map[string]any {
	t.Helper()
	spec, _ := out["hookSpecificOutput"].(map[string]any)
	d, _ := spec["decision"].(map[string]any)
	if spec["hookEventName"] != "PermissionRequest" || d == nil {
		t.Fatalf("no PermissionRequest decision: %v", out)
	}
	return d
}

// Claude Code's permission request waits for its approval, recorded by
// whoever answers: an approval allows the call; the record has the
// request (the call's id from its PreToolUse, the suggestions) and the
// answer.
func TestPermissionApproved(t *testing.T) {
	b := bustest.StartBus(t)
	br, err := bridge.New(bridge.Config{Store: b})
	if err != nil {
		t.Fatal(err)
	}
	out := permission(t, br, b, "perm-ok", approval.Request{Action: events.ActionApprove})
	if d := decisionOf(t, out); d["behavior"] != "allow" || d["updatedInput"] != nil {
		t.Fatalf("answer: %v", out)
	}
	if got := stages(t, b, bridge.DefaultAgent, "perm-ok"); got != "1:intake 1:run.started 1:tool.before 1:approval.requested 1:approval.resolved" {
		t.Fatalf("session: %s", got)
	}
	evs, _ := b.SessionEvents(context.Background(), bridge.DefaultAgent, "perm-ok")
	var req events.ApprovalRequested
	if err := evs[3].DecodeData(&req); err != nil || req.Call.ID != "toolu_9" || !strings.Contains(string(req.Suggestions), "addRules") || req.ExpiresAt.IsZero() {
		t.Fatalf("approval.requested: %s %v", evs[3].Data, err)
	}
}

// The approver edits the call: Claude Code runs the edited input.
func TestPermissionEdited(t *testing.T) {
	b := bustest.StartBus(t)
	br, err := bridge.New(bridge.Config{Store: b})
	if err != nil {
		t.Fatal(err)
	}
	out := permission(t, br, b, "perm-edit", approval.Request{Action: events.ActionApprove, CallID: "toolu_9", Arguments: json.RawMessage(`{"command":"rm -rf build/tmp"}`)})
	d := decisionOf(t, out)
	if in, _ := d["updatedInput"].(map[string]any); d["behavior"] != "allow" || in["command"] != "rm -rf build/tmp" {
		t.Fatalf("answer: %v", out)
	}
}

// A rejection denies, telling the model who and why.
func TestPermissionRejected(t *testing.T) {
	b := bustest.StartBus(t)
	br, err := bridge.New(bridge.Config{Store: b})
	if err != nil {
		t.Fatal(err)
	}
	out := permission(t, br, b, "perm-no", approval.Request{Action: events.ActionRejectAndContinue, Reason: "keep the build"})
	if d := decisionOf(t, out); d["behavior"] != "deny" || !strings.Contains(d["message"].(string), "keep the build") {
		t.Fatalf("answer: %v", out)
	}
}

// A permission request for a call hookbus has not seen (its PreToolUse
// was not sent here) runs the tool.before interceptors first: one that
// denies answers the request deny, recorded as a PreToolUse's denial,
// without asking anyone.
func TestPermissionDeniedByInterceptor(t *testing.T) {
	b := bustest.StartBus(t)
	br, err := bridge.New(bridge.Config{Store: b, Hooks: startGuard(t, b)})
	if err != nil {
		t.Fatal(err)
	}
	handle(t, br, input(t, "perm-guard", "UserPromptSubmit", `, "prompt": "clean"`))
	out := handle(t, br, input(t, "perm-guard", "PermissionRequest", `, "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}`))
	if d := decisionOf(t, out); d["behavior"] != "deny" || !strings.Contains(d["message"].(string), "no rm -rf on this machine") {
		t.Fatalf("answer: %v", out)
	}
	if got := stages(t, b, bridge.DefaultAgent, "perm-guard"); got != "1:intake 1:run.started 1:hook.decided 1:tool.before" {
		t.Fatalf("session: %s", got)
	}
}

// Nobody answers in time: the expiry is recorded, and the request is
// denied under policy fail, left to Claude Code's own prompt (no decision,
// a warning) under ignore.
func TestPermissionExpired(t *testing.T) {
	for _, tc := range []struct {
		policy interceptors.Policy
		want   string
	}{
		{interceptors.PolicyFail, `"behavior":"deny"`},
		{interceptors.PolicyIgnore, `"systemMessage":"hookbus: nobody answered this permission request in time`},
	} {
		b := bustest.StartBus(t)
		br, err := bridge.New(bridge.Config{Store: b, Policy: tc.policy, Timeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s := "perm-late-" + string(tc.policy)
		handle(t, br, input(t, s, "UserPromptSubmit", `, "prompt": "clean"`))
		out, err := br.Handle(context.Background(), input(t, s, "PermissionRequest", permInput))
		if err != nil || !strings.Contains(string(out.JSON()), tc.want) {
			t.Fatalf("%s: %s %v", tc.policy, out.JSON(), err)
		}
		if tc.policy == interceptors.PolicyIgnore && strings.Contains(string(out.JSON()), `"decision"`) {
			t.Fatalf("%s: %s", tc.policy, out.JSON())
		}
		evs, _ := b.SessionEvents(context.Background(), bridge.DefaultAgent, s)
		last := evs[len(evs)-1]
		var r events.ApprovalResolved
		if last.Stage != events.StageApprovalResolved || last.DecodeData(&r) != nil || !r.Expired || r.Channel != events.ChannelExpiry {
			t.Fatalf("%s: the session ends with %s %s", tc.policy, last.Stage, last.Data)
		}
	}
}
