package audit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
	"github.com/hookbus/hookbus/record/approval"
)

// plainRecorder writes on the plain subject whatever writer it is given:
// what a loop-credentialed forger does, since only the loop may publish
// there.
type plainRecorder struct{ b *bus.Bus }

func (p plainRecorder) AppendAfterAs(ctx context.Context, e *events.Event, seen uint64, _ string) (uint64, error) {
	return p.b.AppendAfter(ctx, e, seen)
}

// verify and show flag an answer whose record does not bind who it names
// to the NATS user that wrote it: an identity other than its writer's, or
// a person's answer on the plain subject; an honest one passes.
func TestVerifyFlagsAnswersWhoseIdentityIsNotBound(t *testing.T) {
	_, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	need := loop.Approval{Required: func(c events.ToolCall) string { return "a human" }}
	eng, err := loop.New(loop.Config{Emitter: b, History: b, Model: scripted.New(nil), Tools: tools.Builtin(""), Approval: need})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		by       events.Actor
		recorder approval.Recorder
		problem  string
	}{
		{"honest", events.Actor{Identity: "alice", Writer: "alice", Channel: events.ChannelCLI}, b, ""},
		{"another identity", events.Actor{Identity: "the-ciso", Writer: "approver", Channel: events.ChannelCLI}, b, `claims identity "the-ciso" but was written by NATS user "approver"`},
		{"plain subject", events.Actor{Identity: "alice", Writer: "alice", Channel: events.ChannelCLI}, plainRecorder{b}, "is on the plain subject"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: events.NewID(), Prompt: "what is 6*7?"}
			if res, err := eng.Run(testCtx(t), req); err != nil || res.Reason != loop.ReasonWaiting {
				t.Fatalf("run: %+v, %v", res, err)
			}
			if _, err := approval.Answer(testCtx(t), approval.Deps{History: b, Recorder: tc.recorder}, approval.Request{
				AgentID: "demo", SessionID: req.SessionID, RunID: req.RunID, Action: events.ActionApprove, By: tc.by}); err != nil {
				t.Fatal(err)
			}
			var v audit.Verifier
			show := audit.NewShow(req.RunID)
			if _, err := b.Replay(testCtx(t), bus.Filter{Run: req.RunID}, func(e *events.Event) error { v.Add(e); show.Add(e); return nil }); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range v.Verdicts()[0].Problems {
				if p.Kind == audit.ProblemIdentity {
					got = append(got, p.Detail)
				}
			}
			tree, err := show.Tree(req.RunID)
			if err != nil {
				t.Fatal(err)
			}
			text := treeText(tree)
			switch {
			case tc.problem == "" && (len(got) != 0 || strings.Contains(text, "IDENTITY NOT BOUND")):
				t.Fatalf("an honest answer flagged: %v\n%s", got, text)
			case tc.problem != "" && (len(got) != 2 || !strings.Contains(got[0], tc.problem) || !strings.Contains(text, "IDENTITY NOT BOUND: ")):
				t.Fatalf("identity problems %q, want both answers flagged %q; show:\n%s", got, tc.problem, text)
			}
		})
	}
}

// treeText is the text of every item of t.
func treeText(t *audit.RunTree) string {
	var b strings.Builder
	var walk func(items []*audit.Item)
	walk = func(items []*audit.Item) {
		for _, it := range items {
			b.WriteString(it.Text + "\n")
			walk(it.Items)
		}
	}
	walk(t.Items)
	return b.String()
}
