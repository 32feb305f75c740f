package natsconf_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/loop/tools"
	"github.com/hookbus/hookbus/record/approval"
	"github.com/nats-io/nats.go"
)

// userBus is a bus over a connection as user.
func (f single) userBus(t *testing.T, user string) (*bus.Bus, *nats.Conn, asyncErrors) {
	t.Helper()
	nc, errs := f.connect(t, user)
	b, err := bus.New(nc, bus.WithDefaultTimeout(wait))
	if err != nil {
		t.Fatal(err)
	}
	return b, nc, errs
}

// waitingRun runs, as the loop user, a run of agent demo (the demo script:
// the clock, then the calculator) whose calculator call waits for a human,
// and returns its request and the call waiting. No worker runs afterwards.
func waitingRun(t *testing.T, f single) (*events.RunRequest, string) {
	t.Helper()
	lb, nc, _ := f.userBus(t, "loop")
	eng, err := loop.New(loop.Config{Emitter: lb, History: lb, Queue: runs.New(lb), Model: scripted.New(nil), Tools: tools.Builtin(""),
		Approval: loop.Approval{Required: func(c events.ToolCall) string {
			if c.Name == "calculator" {
				return "maths needs a human"
			}
			return ""
		}}})
	if err != nil {
		t.Fatal(err)
	}
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "demo", SessionID: events.NewID(), Prompt: "what is 6*7?"}
	res, err := eng.Run(testContext(t), req)
	if err != nil || res.Reason != loop.ReasonWaiting || len(res.Waiting) != 1 {
		t.Fatalf("run as loop: %+v, %v; want it waiting for the calculator", res, err)
	}
	noErrors(t, nc)
	return req, res.Waiting[0].Call.ID
}

// answerAs answers call of run req as user does with observer approve or
// reject: who it is comes from the server (WhoAmI); note is what the user
// typed (--note, formerly --by).
func (f single) answerAs(t *testing.T, user string, req *events.RunRequest, call, action, note string) (*approval.Result, error) {
	t.Helper()
	b, _, _ := f.userBus(t, user)
	ctx := testContext(t)
	me, err := b.WhoAmI(ctx)
	if err != nil {
		t.Fatalf("who am I, as %s: %v", user, err)
	}
	reason := ""
	if action != events.ActionApprove {
		reason = "not today"
	}
	return approval.Answer(ctx, approval.Deps{History: b, Recorder: b}, approval.Request{
		AgentID: req.AgentID, SessionID: req.SessionID, RunID: req.RunID, CallID: call, Action: action, Reason: reason,
		By: events.Actor{Identity: me.User, Via: me.Via, Writer: me.User, Channel: events.ChannelCLI, DeclaredBy: note}})
}

// Two approvers answer one call, with no worker running: the first answer
// is recorded at once, by its author as the server authenticated it (the
// name typed, "the-ciso", only as a note), on its author's subject; the
// second, a reject by another user, is refused at once naming the first.
// Neither approver can write on the other's subject, and the loop cannot
// write a person's answer.
func TestFirstAnswerWinsAndSaysWhoGaveIt(t *testing.T) {
	f := startSingle(t)
	req, call := waitingRun(t, f)

	ar, err := f.answerAs(t, "approver", req, call, events.ActionApprove, "the-ciso")
	if err != nil || len(ar.Resolved) != 1 || len(ar.Waiting) != 0 {
		t.Fatalf("approve as approver: %+v, %v", ar, err)
	}
	got := ar.Resolved[0]
	if got.By != "approver" || got.Identity != "approver" || got.Via != "nats" || got.Writer != "approver" ||
		got.Channel != events.ChannelCLI || got.DeclaredBy != "the-ciso" {
		t.Fatalf("the answer records %+v; want approver as who answered, the-ciso only as a note", got)
	}
	_, err = f.answerAs(t, "alice", req, call, events.ActionReject, "")
	var first *approval.AnsweredError
	if !errors.As(err, &first) || first.First.Identity != "approver" || first.First.Action != events.ActionApprove ||
		!strings.Contains(err.Error(), "answered already: approve by approver (cli) [note: declared \"the-ciso\"] at ") {
		t.Fatalf("alice's reject after approver's approve: %v; want it refused naming the first answer", err)
	}

	// The record: one answer, on approver's subject, binding who it names.
	ab, _, _ := f.userBus(t, "auditor")
	var resolved []*events.Event
	var v audit.Verifier
	if _, err := ab.Replay(testContext(t), bus.Filter{Session: req.SessionID}, func(e *events.Event) error {
		if e.Stage == events.StageApprovalResolved {
			resolved = append(resolved, e)
		}
		v.Add(e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(resolved) != 1 || resolved[0].Writer != "approver" {
		t.Fatalf("approval.resolved recorded: %d, writer %q", len(resolved), resolved[0].Writer)
	}
	for _, verdict := range v.Verdicts() {
		for _, p := range verdict.Problems {
			if p.Kind != audit.ProblemNoEnd {
				t.Errorf("verify: %+v", p)
			}
		}
	}

	_, approver, aerrs := f.userBus(t, "approver")
	denyPublish(t, approver, aerrs, "hookbus.evt.demo."+req.SessionID+".approval.resolved.alice")
	denyPublish(t, approver, aerrs, "hookbus.evt.demo."+req.SessionID+".approval.resolved")
	denyPublish(t, approver, aerrs, "hookbus.evt.demo."+req.SessionID+".tool.after")
	_, lnc, lerrs := f.userBus(t, "loop")
	denyPublish(t, lnc, lerrs, "hookbus.evt.demo."+req.SessionID+".approval.resolved.approver")
}

// The approver reads the events and records its answers on its own subject,
// and may do nothing else: no other event, no other's answer, no run
// request, no wake-up, no interception request, no registry entry, no
// stream purge.
func TestApproverAnswersAndReadsOnly(t *testing.T) {
	f := startSingle(t)
	req, call := waitingRun(t, f)
	b, approver, errs := f.userBus(t, "approver")
	if _, err := b.Replay(testContext(t), bus.Filter{Agent: "demo"}, func(*events.Event) error { return nil }); err != nil {
		t.Fatalf("replay as approver: %v", err)
	}
	if _, err := f.answerAs(t, "approver", req, call, events.ActionApprove, ""); err != nil {
		t.Fatalf("answer as approver: %v", err)
	}
	noErrors(t, approver)
	for _, subj := range []string{
		"hookbus.evt.agent1.session1.intake",
		"hookbus.evt.agent1.session1.approval.resolved",
		"hookbus.evt.agent1.session1.approval.resolved.alice",
		"hookbus.run.agent1",
		"hookbus.wake.agent1.r1",
		"hookbus.approval.agent1",
		"hookbus.hook.tool.before.plugin-pii",
		"$KV.hookbus_hooks.plugin-pii",
		"$JS.API.STREAM.PURGE.HOOKBUS_RUNS",
		"$JS.API.STREAM.PURGE.HOOKBUS_EVENTS",
	} {
		denyPublish(t, approver, errs, subj)
	}
	admin, _ := f.connect(t, "admin")
	if n := streamMsgs(t, jetStream(t, admin), "HOOKBUS_RUNS"); n != 0 {
		t.Fatalf("HOOKBUS_RUNS holds %d messages, want none", n)
	}
}

// The web page's server (user webui) records an answer for a user the page
// authenticated: on its own subject, naming that user as the identity it
// vouches for; verify finds it bound.
func TestWebuiVouchesForItsUsers(t *testing.T) {
	f := startSingle(t)
	req, call := waitingRun(t, f)
	b, nc, _ := f.userBus(t, "webui")
	ctx := testContext(t)
	me, err := b.WhoAmI(ctx)
	if err != nil || me.User != "webui" {
		t.Fatalf("who am I, as webui: %+v, %v", me, err)
	}
	ar, err := approval.Answer(ctx, approval.Deps{History: b, Recorder: b}, approval.Request{
		AgentID: req.AgentID, SessionID: req.SessionID, RunID: req.RunID, CallID: call, Action: events.ActionApprove,
		By: events.Actor{Identity: "carol@example.com", Via: "proxy", Writer: me.User, Channel: events.ChannelWeb}})
	if err != nil || len(ar.Resolved) != 1 {
		t.Fatalf("answer as webui: %+v, %v", ar, err)
	}
	noErrors(t, nc)
	var v audit.Verifier
	if _, err := b.Replay(ctx, bus.Filter{Session: req.SessionID}, func(e *events.Event) error { v.Add(e); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, p := range v.Verdicts()[0].Problems {
		if p.Kind == audit.ProblemIdentity {
			t.Fatalf("verify: %+v", p)
		}
	}
	if got := ar.Resolved[0].Who(); got != "carol@example.com (web, vouched for by NATS user webui)" {
		t.Fatalf("who answered: %q", got)
	}
}
