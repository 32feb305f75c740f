package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Plugins and publishers that lie: a run request whose body names another
// agent than its subject, an interceptor that forges the record of the
// event it is asked about, an interceptor whose clock runs ahead.

// A run request published on hookbus.run.demo whose body names agent
// "victim", to a worker that serves only demo (loop serve --agent demo):
// nothing runs, nothing is written under hookbus.evt.victim.>, a dead
// letter on hookbus.dlq.<the workers' durable> carries the request and the
// reason, the worker logs it, and the worker goes on serving demo.
func TestFaultRunRequestNamingAnotherAgent(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 3*time.Minute)
	srv := startNATS(t)
	b := adminBus(t, ctx, srv.url(), 1)
	w := startWorker(t, "--nats", srv.url(), "--agent", "demo", "-v")

	forged := &events.RunRequest{RunID: events.NewID(), AgentID: "victim", SessionID: "s1", Prompt: "run as someone else", SubmittedAt: time.Now().UTC()}
	body, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: events.DefaultPrefix + ".run.demo", Header: nats.Header{jetstream.MsgIDHeader: []string{forged.RunID}}, Data: body}
	if _, err := b.JetStream().PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}

	dlq := b.Names().DeadLetters
	subject := events.DefaultPrefix + ".dlq." + runs.DefaultDurable
	var letter *jetstream.RawStreamMsg
	waitEvery(t, time.Minute, 100*time.Millisecond, func() bool {
		s, err := b.JetStream().Stream(ctx, dlq)
		if err != nil {
			return false
		}
		letter, err = s.GetLastMsgForSubject(ctx, subject)
		return err == nil
	}, "a dead letter on %s\nworker:\n%s", subject, lazy(w.stderr.String))
	why := letter.Header.Get("Hookbus-Dlq-Error")
	if !strings.Contains(why, `names agent "victim"`) || !strings.Contains(why, "hookbus.run.demo") || !strings.Contains(why, "refused") || string(letter.Data) != string(body) {
		t.Fatalf("dead letter: reason %q, body %s; want the request, refused, naming the agent and the subject", why, letter.Data)
	}
	if !strings.Contains(w.stderr.String(), "run request refused") {
		t.Fatalf("the worker did not log the refusal:\n%s", w.stderr.String())
	}

	// The worker still serves demo; then nothing of victim, and nothing of
	// the refused run, is in the events stream.
	ok := run(t, "loop", "submit", "--nats", srv.url(), "--agent", "demo", "--wait", "what is 6*7?")
	if ok.code != 0 || !strings.Contains(ok.stdout, "6*7 = 42") {
		t.Fatalf("a demo run after the refusal: exit %d\n%s\n%s", ok.code, ok.stdout, ok.stderr)
	}
	for _, e := range replayAll(t, srv.url()) {
		if e.AgentID == "victim" || e.RunID == forged.RunID {
			t.Fatalf("the refused request left event %s (%s) of agent %s, run %s", e.ID, e.Stage, e.AgentID, e.RunID)
		}
	}
	st, err := b.JetStream().Stream(ctx, b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(events.DefaultPrefix+".evt.victim.>"))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != 0 {
		t.Fatalf("subjects of victim in the events stream: %v", info.State.Subjects)
	}
	t.Logf("refused and dead-lettered: %s", why)
}

// An interceptor (another process) asked about the calculator's tool.before
// stores, before it answers allow, a forgery on the event's subject: the
// request with other arguments, under Nats-Msg-Id = the request's ce-id. The
// loop's own tool.before is stored all the same, with the real arguments,
// under an id of its own (minted after the interceptors answered), and
// hook.decided names it; the calculator runs on the real arguments. The
// forgery is in the stream as a foreign message (a server without auth
// lets any client publish; deploy/nats' accounts forbid plugins to), and
// without it the run's record is whole.
func TestFaultInterceptorForgesTheRecord(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 3*time.Minute)
	srv := startNATS(t)
	b := adminBus(t, ctx, srv.url(), 1)
	if err := remote.NewRegistry(b).Put(ctx, interceptors.Registration{Plugin: "forger", Stage: events.StageToolBefore, Tools: "calculator", Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	forgedID := make(chan string, 4)
	nc := connect(t, srv.url())
	if _, err := nc.Subscribe(receivedSubject("forger"), func(m *nats.Msg) { forgedID <- string(m.Data) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	startInterceptor(t, srv.url(), "forger", "forge")

	r := run(t, "loop", "run", "--nats", srv.url(), "--agent", "forge", "--session", "s1", "what is 6*7?")
	if r.code != 0 || !strings.Contains(r.stdout, "6*7 = 42") {
		t.Fatalf("loop run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	runID := loopRunID(t, r)
	var fid string
	select {
	case fid = <-forgedID:
	default:
		t.Fatal("the interceptor stored no forgery")
	}

	evs := replayAll(t, srv.url())
	var forgery *events.Event
	var record []*events.Event
	for _, e := range evs {
		if e.ID == fid {
			forgery = e
			continue
		}
		record = append(record, e)
	}
	if forgery == nil {
		t.Fatalf("the forgery %s is not in the stream", fid)
	}
	var fp events.ToolBefore
	mustDecode(t, forgery, &fp)
	if !strings.Contains(string(fp.Call.Arguments), forgedExpression) {
		t.Fatalf("the forgery's arguments: %s", fp.Call.Arguments)
	}
	eff := wholeRun(t, record, runID)
	var real *events.Event
	for _, e := range eff {
		if e.Stage == events.StageToolBefore && e.Subject == "calculator" {
			real = e
		}
	}
	if real == nil {
		t.Fatalf("the loop's tool.before of the calculator is not in the stream\n%s", seqStages(eff))
	}
	var tb events.ToolBefore
	mustDecode(t, real, &tb)
	if real.ID == fid || !strings.Contains(string(tb.Call.Arguments), "6*7") {
		t.Fatalf("the stored tool.before %s has arguments %s; the forgery was %s", real.ID, tb.Call.Arguments, fid)
	}
	decided := payloadsOf[events.HookDecided](t, eff, events.StageHookDecided)
	if len(decided) != 1 || decided[0].Plugin != "forger" || decided[0].EventID != real.ID {
		t.Fatalf("hook.decided %+v; want forger's, naming the stored event %s", decided, real.ID)
	}
	if ta := toolAfterOf(t, eff, "calculator"); ta.Result.Content != "42" {
		t.Fatalf("the calculator's result %q: it did not run on the real arguments", ta.Result.Content)
	}
	t.Logf("forgery %s (run %s, seq %d, arguments %s) in the stream; the loop's tool.before %s (seq %d, arguments %s) and the run's %d events whole",
		fid, forgery.RunID, forgery.Seq, fp.Call.Arguments, real.ID, real.Seq, tb.Call.Arguments, len(eff))
}

// An interceptor process whose clock runs 10 minutes ahead of the loop's
// (a responder moves each request's Hookbus-Deadline 10 minutes into the
// past, as that clock reads it, and hands it to a remote.Serve service that
// denies the calculator), registered with policy ignore: the hook is
// called and its deny applied: the run's calculator call is denied, no
// hook.failed, never a silent skip. Probes sent straight to the service
// show why: a deadline in the past with Hookbus-Timeout-Ms 2000 gets the
// decision; the same without Hookbus-Timeout-Ms gets 504.
func TestFaultInterceptorClockAhead(t *testing.T) {
	hardFaults(t)
	ctx := testCtx(t, 3*time.Minute)
	srv := startNATS(t)
	b := adminBus(t, ctx, srv.url(), 1)
	if err := remote.NewRegistry(b).Put(ctx, interceptors.Registration{Plugin: "skewed", Stage: events.StageToolBefore, Tools: "calculator", Timeout: 5 * time.Second, Policy: interceptors.PolicyIgnore}); err != nil {
		t.Fatal(err)
	}
	startInterceptor(t, srv.url(), "skewed", "skew-deny")

	// The probes.
	nc := connect(t, srv.url())
	e, err := events.New(events.StageToolBefore, events.Meta{Source: "hookbus/test", AgentID: "skew", SessionID: "probe", RunID: events.NewID(), Step: 1, Seq: 3, Subject: "calculator"},
		events.ToolBefore{Call: events.ToolCall{ID: "call_1_1", Name: "calculator", Arguments: json.RawMessage(`{"expression":"6*7"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	h, body, err := events.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	probe := func(budget bool) *nats.Msg {
		t.Helper()
		m := &nats.Msg{Subject: events.DefaultPrefix + ".hook.tool.before.skewed-inner", Header: nats.Header{}, Data: body}
		for k, v := range h {
			m.Header[k] = v
		}
		m.Header.Del(events.HeaderMsgID)
		m.Header.Set(remote.HeaderDeadline, time.Now().Add(-skewAhead).UTC().Format(time.RFC3339Nano))
		if budget {
			m.Header.Set(remote.HeaderTimeoutMs, "2000")
		}
		reply, err := nc.RequestMsg(m, 10*time.Second)
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		return reply
	}
	if rep := probe(true); rep.Header.Get("Nats-Service-Error-Code") != "" || !strings.Contains(string(rep.Data), `"deny"`) {
		t.Fatalf("a request whose deadline is past on the service's clock, with a 2000 ms budget: error %q %q, body %s; want the decision",
			rep.Header.Get("Nats-Service-Error-Code"), rep.Header.Get("Nats-Service-Error"), rep.Data)
	}
	if rep := probe(false); rep.Header.Get("Nats-Service-Error-Code") != "504" {
		t.Fatalf("the same request without a budget: error %q, body %s; want 504 (the deadline is all it has)", rep.Header.Get("Nats-Service-Error-Code"), rep.Data)
	}

	// The run.
	r := run(t, "loop", "run", "--nats", srv.url(), "--agent", "skew", "--session", "s1", "what is 6*7?")
	if r.code != 0 || strings.Contains(r.stdout, "6*7 = 42") || !strings.Contains(r.stdout, "denied: skewed") {
		t.Fatalf("loop run: exit %d (want 0, the calculator denied)\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	eff := wholeRun(t, replayAll(t, srv.url()), loopRunID(t, r))
	decided := payloadsOf[events.HookDecided](t, eff, events.StageHookDecided)
	failed := payloadsOf[events.HookFailed](t, eff, events.StageHookFailed)
	if len(decided) != 1 || decided[0].Plugin != "skewed" || decided[0].Decision != "deny" || len(failed) != 0 {
		t.Fatalf("hook.decided %+v, hook.failed %+v; want skewed's deny, no failure", decided, failed)
	}
	if ta := toolAfterOf(t, eff, "calculator"); !ta.Result.IsError || !strings.Contains(ta.Result.Content, "denies it") {
		t.Fatalf("the calculator's result %+v; want the deny", ta.Result)
	}
	t.Logf("clock %v ahead: the hook was called and its deny applied (%s)", skewAhead, decided[0].Reason)
}
