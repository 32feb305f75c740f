package interceptors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

func newEvent(t *testing.T, stage events.Stage, subject string, payload any) *events.Event {
	t.Helper()
	ev, err := events.New(stage, events.Meta{Source: "test", AgentID: "agent-1", SessionID: "s1", RunID: "r1", Subject: subject}, payload)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func intakeEvent(t *testing.T, prompt string) *events.Event {
	return newEvent(t, events.StageIntake, "", events.Intake{Prompt: prompt})
}

func decide(d *Decision, err error) Interceptor {
	return Func(func(context.Context, *Request) (*Decision, error) { return d, err })
}

func runOne(t *testing.T, reg Registration, ic Interceptor, ev *events.Event) *ChainResult {
	t.Helper()
	c := NewChain(WithTrust(NewGrants(reg.Plugin)))
	mustRegister(t, c, reg, ic)
	out, err := c.Run(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunNothingRegistered(t *testing.T) {
	c := NewChain()
	ev := intakeEvent(t, "hi")
	out, err := c.Run(context.Background(), ev)
	if err != nil || out.Decision != Allow || string(out.Data) != string(ev.Data) || out.Records != nil || out.EventID != ev.ID {
		t.Fatalf("%+v, %v", out, err)
	}
	obs := newEvent(t, events.StageRunStarted, "", events.RunStarted{})
	if out, err := c.Run(context.Background(), obs); err != nil || out.Decision != Allow {
		t.Fatalf("observe-only stage: %+v, %v", out, err)
	}
	if _, err := c.Run(context.Background(), nil); !errors.Is(err, events.ErrMalformedEvent) {
		t.Fatalf("nil event: %v", err)
	}
}

func TestRunDataNotFetched(t *testing.T) {
	c := NewChain()
	mustRegister(t, c, Registration{Plugin: "a", Stage: events.StageIntake}, Func(allowFunc))
	ev := intakeEvent(t, "hi")
	ev.Data, ev.DataRef = nil, "hookbus_payloads/x"
	if _, err := c.Run(context.Background(), ev); !errors.Is(err, events.ErrPayload) || !strings.Contains(err.Error(), "fetch it") {
		t.Fatalf("unfetched data: %v", err)
	}
}

// TestModifyMustKeepPayloadShape: a modification that no longer decodes as
// the stage's payload is a bad reply; an added field is not (readers ignore
// unknown fields), and the audit patch shows it.
func TestModifyMustKeepPayloadShape(t *testing.T) {
	ev := newEvent(t, events.StageToolBefore, "bash", events.ToolBefore{Call: events.ToolCall{ID: "1", Name: "bash"}})
	for name, d := range map[string]*Decision{
		"wrong type":         {Kind: Modify, Data: json.RawMessage(`{"call":{"id":1}}`)},
		"patched wrong type": {Kind: Modify, Patch: []PatchOp{{Op: "replace", Path: "/call", Value: json.RawMessage(`"x"`)}}},
		"invalid json":       {Kind: Modify, Data: json.RawMessage(`{"call":`)},
		"trailing data":      {Kind: Modify, Data: json.RawMessage(`{"call":{}} {}`)},
	} {
		out := runOne(t, Registration{Plugin: "m", Stage: events.StageToolBefore}, decide(d, nil), ev)
		if out.Decision != Allow || out.Records[0].Failure == nil || out.Records[0].Failure.Kind != events.FailBadReply {
			t.Errorf("%s: %s, record %+v", name, out.Decision, out.Records[0])
		}
	}
	added := &Decision{Kind: Modify, Patch: []PatchOp{{Op: "add", Path: "/call/future", Value: json.RawMessage(`1`)}}}
	out := runOne(t, Registration{Plugin: "m", Stage: events.StageToolBefore}, decide(added, nil), ev)
	if out.Decision != Modify || out.Records[0].Failure != nil || !strings.Contains(string(out.Data), `"future":1`) {
		t.Errorf("added field: %+v", out.Records[0])
	}
	out = runOne(t, Registration{Plugin: "m", Stage: events.StageToolBefore}, decide(&Decision{Kind: Modify, Patch: []PatchOp{}}, nil), ev)
	if out.Decision != Modify || out.Records[0].Failure != nil || string(out.Data) != string(ev.Data) {
		t.Errorf("empty patch: %+v", out)
	}
}

func TestRecordPatchOfReplacement(t *testing.T) {
	ev := newEvent(t, events.StageModelResponded, "", events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, Content: "ssn 123"}, Model: "m"})
	d, _ := Replace(events.ModelResponded{Message: events.Message{Role: events.RoleAssistant, Content: "ssn [x]"}, Model: "m"})
	out := runOne(t, Registration{Plugin: "redact", Stage: events.StageModelResponded}, decide(d, nil), ev)
	want := `[{"op":"replace","path":"/message/content","value":"ssn [x]"}]`
	if got := string(out.Records[0].HookDecided().Patch); got != want {
		t.Fatalf("hook.decided patch %s, want %s", got, want)
	}
}

func TestTransportErrorsClassified(t *testing.T) {
	ev := intakeEvent(t, "hi")
	for _, tc := range []struct {
		err      error
		kind     string
		sentinel error
	}{
		{fmt.Errorf("%w: hookbus.hook.intake.x", ErrNoResponders), events.FailNoResponders, ErrNoResponders},
		{fmt.Errorf("reading reply: %w", ErrBadReply), events.FailBadReply, ErrBadReply},
		{fmt.Errorf("request: %w", ErrTimeout), events.FailTimeout, ErrTimeout},
		{context.DeadlineExceeded, events.FailTimeout, ErrTimeout},
		{&CallError{Plugin: "other", Kind: events.FailNoResponders, Err: errors.New("nobody")}, events.FailNoResponders, ErrNoResponders},
		{&CallError{Kind: "weird", Err: errors.New("x")}, events.FailError, ErrHookError},
		{errors.New("plain"), events.FailError, ErrHookError},
	} {
		out := runOne(t, Registration{Plugin: "remote", Stage: events.StageIntake}, decide(nil, tc.err), ev)
		f := out.Records[0].Failure
		if f == nil || f.Kind != tc.kind || !errors.Is(f.Err, tc.sentinel) {
			t.Errorf("%v: failure %+v, want kind %s", tc.err, f, tc.kind)
			continue
		}
		var he *CallError
		if !errors.As(f.Err, &he) || he.Plugin != "remote" || he.Stage != events.StageIntake {
			t.Errorf("%v: %#v does not name this plugin and stage", tc.err, f.Err)
		}
	}
}

func TestFailureKindAndHookError(t *testing.T) {
	for kind, sentinel := range map[string]error{
		events.FailTimeout: ErrTimeout, events.FailNoResponders: ErrNoResponders, events.FailBadReply: ErrBadReply,
		events.FailError: ErrHookError, events.FailPanic: ErrPanic,
	} {
		he := &CallError{Plugin: "p", Stage: events.StageIntake, Kind: kind, Err: errors.New("cause")}
		if !errors.Is(he, sentinel) || FailureKind(he) != kind || FailureKind(fmt.Errorf("wrapped: %w", he)) != kind {
			t.Errorf("%s: Is %v, FailureKind %s", kind, errors.Is(he, sentinel), FailureKind(he))
		}
		for _, other := range []error{ErrTimeout, ErrNoResponders, ErrBadReply, ErrHookError, ErrPanic} {
			if other != sentinel && errors.Is(he, other) {
				t.Errorf("%s matches %v", kind, other)
			}
		}
		if want := "interceptor p on intake failed (" + kind + "): cause"; he.Error() != want {
			t.Errorf("Error() = %q, want %q", he.Error(), want)
		}
	}
	cause := errors.New("root")
	if he := (&CallError{Kind: events.FailError, Err: cause}); !errors.Is(he, cause) {
		t.Error("CallError does not unwrap to its cause")
	}
}

// TestAbandonedCallCannotWrite: an interceptor that answers after its
// timeout changes nothing; -race checks that its goroutine touches no
// shared state.
func TestAbandonedCallCannotWrite(t *testing.T) {
	release, returned := make(chan struct{}), make(chan struct{})
	late := Func(func(_ context.Context, req *Request) (*Decision, error) {
		defer close(returned)
		<-release
		_ = req.Event.Data // still readable: the chain never writes to an event it handed out
		return Replace(events.Intake{Prompt: "late"})
	})
	c := NewChain()
	mustRegister(t, c, Registration{Plugin: "late", Stage: events.StageIntake, Timeout: 10 * time.Millisecond}, late)
	mustRegister(t, c, Registration{Plugin: "next", Stage: events.StageIntake}, decide(Replace(events.Intake{Prompt: "next"})))
	out, err := c.Run(context.Background(), intakeEvent(t, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	snapshot, _ := json.Marshal(out)
	close(release)
	<-returned
	after, _ := json.Marshal(out)
	if !bytes.Equal(snapshot, after) || !strings.Contains(string(out.Data), `"next"`) {
		t.Fatalf("outcome changed after the late answer:\n%s\n%s", snapshot, after)
	}
	if out.Records[0].Failure == nil || out.Records[0].Failure.Kind != events.FailTimeout {
		t.Fatalf("record %+v", out.Records[0])
	}
}

func TestRunInterrupted(t *testing.T) {
	c := NewChain()
	started := make(chan struct{})
	mustRegister(t, c, Registration{Plugin: "first", Stage: events.StageIntake}, Func(allowFunc))
	mustRegister(t, c, Registration{Plugin: "blocks", Stage: events.StageIntake}, Func(func(ctx context.Context, _ *Request) (*Decision, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	out, err := c.Run(ctx, intakeEvent(t, "hi"))
	if !errors.Is(err, context.Canceled) || out == nil || len(out.Records) != 1 || out.Records[0].Plugin != "first" {
		t.Fatalf("interrupted run: %+v, %v", out, err)
	}
	// An already-ended ctx calls nobody.
	out, err = c.Run(ctx, intakeEvent(t, "hi"))
	if !errors.Is(err, context.Canceled) || len(out.Records) != 0 {
		t.Fatalf("run on an ended ctx: %+v, %v", out, err)
	}
}

func TestValidatorsInterrupted(t *testing.T) {
	c := NewChain()
	started := make(chan struct{})
	mustRegister(t, c, Registration{Plugin: "v", Stage: events.StageIntake, Mode: ModeValidate}, Func(func(ctx context.Context, _ *Request) (*Decision, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	mustRegister(t, c, Registration{Plugin: "v2", Stage: events.StageIntake, Mode: ModeValidate}, Func(allowFunc))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if _, err := c.Run(ctx, intakeEvent(t, "hi")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

func TestValidatorFailClosed(t *testing.T) {
	c := NewChain()
	mustRegister(t, c, Registration{Plugin: "v1", Stage: events.StageIntake, Mode: ModeValidate, Policy: PolicyFail}, decide(nil, errors.New("down")))
	mustRegister(t, c, Registration{Plugin: "v2", Stage: events.StageIntake, Mode: ModeValidate}, decide(&Decision{Kind: Deny, Reason: "later"}, nil))
	out, err := c.Run(context.Background(), intakeEvent(t, "hi"))
	if err != nil || out.Decision != Deny || out.Plugin != "v1" || out.Reason != "blocked: the policy check failed" || len(out.Records) != 2 {
		t.Fatalf("%+v, %v", out, err)
	}
	if f := out.Records[0].Failure; f == nil || !strings.Contains(f.Err.Error(), "down") || f.Outcome != FailedClosed {
		t.Fatalf("failure record %+v: want the error and failed_closed", f)
	}
	if out.Records[1].Decision != Deny {
		t.Fatalf("second validator not recorded: %+v", out.Records[1])
	}
}

func TestGoexitIsAFailure(t *testing.T) {
	out := runOne(t, Registration{Plugin: "quits", Stage: events.StageIntake}, Func(func(context.Context, *Request) (*Decision, error) {
		runtime.Goexit()
		return nil, nil
	}), intakeEvent(t, "hi"))
	if f := out.Records[0].Failure; f == nil || f.Kind != events.FailPanic || !strings.Contains(f.Err.Error(), "Goexit") {
		t.Fatalf("record %+v", out.Records[0])
	}
}

func TestMockIsError(t *testing.T) {
	ev := newEvent(t, events.StageToolBefore, "fetch", events.ToolBefore{Call: events.ToolCall{ID: "c9", Name: "fetch"}})
	out := runOne(t, Registration{Plugin: "chaos", Stage: events.StageToolBefore}, decide(Mocked("503", true), nil), ev)
	if out.Decision != Mock || out.Mock == nil || !out.Mock.IsError || out.Mock.CallID != "c9" || out.Reason != "mocked by chaos" {
		t.Fatalf("%+v %+v", out, out.Mock)
	}
}

func TestDefaultReasons(t *testing.T) {
	for _, tc := range []struct {
		stage events.Stage
		d     *Decision
		want  string
	}{
		{events.StageIntake, &Decision{Kind: Deny}, "denied by p"},
		{events.StageToolBefore, &Decision{Kind: Ask}, "approval requested by p"},
		{events.StageStop, &Decision{Kind: Continue, Reason: "go on"}, "go on"},
	} {
		var payload any
		payload, _ = events.PayloadFor(tc.stage)
		out := runOne(t, Registration{Plugin: "p", Stage: tc.stage}, decide(tc.d, nil), newEvent(t, tc.stage, "", payload))
		if out.Reason != tc.want {
			t.Errorf("%s on %s: reason %q, want %q", tc.d.Kind, tc.stage, out.Reason, tc.want)
		}
	}
}

func TestLogging(t *testing.T) {
	var buf bytes.Buffer
	c := NewChain(WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	mustRegister(t, c, Registration{Plugin: "ok", Stage: events.StageIntake}, Func(allowFunc))
	mustRegister(t, c, Registration{Plugin: "boom", Stage: events.StageIntake}, Func(func(context.Context, *Request) (*Decision, error) {
		panic("kaboom")
	}))
	mustRegister(t, c, Registration{Plugin: "strict", Stage: events.StageIntake, Policy: PolicyFail}, decide(nil, errors.New("down")))
	if _, err := c.Run(context.Background(), intakeEvent(t, "hi")); err != nil {
		t.Fatal(err)
	}
	log := buf.String()
	for _, want := range []string{"interceptor decided", "plugin=ok", "interceptor panicked", "kaboom", "goroutine", "failed open", "failed closed", "plugin=strict"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if NewChain(WithLogger(nil)).logger == nil {
		t.Error("WithLogger(nil) left no logger")
	}
}

func TestAuditPayloads(t *testing.T) {
	r := CallRecord{Plugin: "p", Stage: events.StageToolBefore, EventID: "e1", Decision: Deny, Reason: "no", Latency: 1500 * time.Microsecond, Remote: true}
	st, p := r.Audit()
	if d, ok := p.(events.HookDecided); st != events.StageHookDecided || !ok || d.LatencyUS != 1500 || !d.Remote || d.Patch != nil || d.EventID != "e1" {
		t.Fatalf("%s %+v", st, p)
	}
	if (r.HookFailed() != events.HookFailed{}) {
		t.Fatal("HookFailed of a record that did not fail")
	}
	he := &CallError{Plugin: "p", Stage: events.StageToolBefore, Kind: events.FailTimeout, Err: errors.New("slow")}
	r = CallRecord{Plugin: "p", Stage: events.StageToolBefore, EventID: "e1", Latency: time.Second,
		Failure: &CallFailure{Kind: events.FailTimeout, Err: he, Policy: PolicyFail, Outcome: FailedClosed}}
	st, p = r.Audit()
	want := events.HookFailed{Plugin: "p", Stage: events.StageToolBefore, Kind: "timeout", Error: he.Error(),
		Policy: "fail", Outcome: "failed_closed", LatencyUS: 1e6, EventID: "e1"}
	if st != events.StageHookFailed || p != want {
		t.Fatalf("%s %+v\nwant %+v", st, p, want)
	}
	// Audit payloads are valid event payloads.
	if _, err := events.New(st, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r"}, p); err != nil {
		t.Fatal(err)
	}
}

// bound is a ContextBound interceptor.
type bound struct{ Func }

func (bound) BoundByContext() {}

// TestContextBound: a ContextBound interceptor, called on the chain's
// goroutine, still has its timeout, its panics recovered and its ctx
// cancellation reported as for any other.
func TestContextBound(t *testing.T) {
	waits := bound{func(ctx context.Context, _ *Request) (*Decision, error) {
		<-ctx.Done()
		return nil, fmt.Errorf("request: %w", ctx.Err())
	}}
	out := runOne(t, Registration{Plugin: "slow", Stage: events.StageIntake, Timeout: 10 * time.Millisecond}, waits, intakeEvent(t, "hi"))
	f := out.Records[0].Failure
	if f == nil || f.Kind != events.FailTimeout || !strings.Contains(f.Err.Error(), "no answer within 10ms") || out.Records[0].Latency < 10*time.Millisecond {
		t.Fatalf("timed-out record %+v", out.Records[0])
	}

	out = runOne(t, Registration{Plugin: "panics", Stage: events.StageIntake}, bound{func(context.Context, *Request) (*Decision, error) {
		panic("boom")
	}}, intakeEvent(t, "hi"))
	if f := out.Records[0].Failure; f == nil || f.Kind != events.FailPanic || !strings.Contains(f.Err.Error(), "boom") {
		t.Fatalf("panicked record %+v", out.Records[0])
	}

	c := NewChain()
	mustRegister(t, c, Registration{Plugin: "first", Stage: events.StageIntake}, bound{func(context.Context, *Request) (*Decision, error) {
		return Replace(events.Intake{Prompt: "first"})
	}})
	started := make(chan struct{})
	mustRegister(t, c, Registration{Plugin: "blocks", Stage: events.StageIntake}, bound{func(ctx context.Context, req *Request) (*Decision, error) {
		if !strings.Contains(string(req.Event.Data), `"first"`) {
			t.Errorf("second call sees %s", req.Event.Data)
		}
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	out, err := c.Run(ctx, intakeEvent(t, "hi"))
	if !errors.Is(err, context.Canceled) || out == nil || len(out.Records) != 1 || out.Records[0].Plugin != "first" {
		t.Fatalf("interrupted run: %+v, %v", out, err)
	}

	// Validators run in parallel still: two that each wait for the other.
	c = NewChain()
	a, b := make(chan struct{}), make(chan struct{})
	mustRegister(t, c, Registration{Plugin: "va", Stage: events.StageIntake, Mode: ModeValidate, Timeout: 5 * time.Second}, bound{func(ctx context.Context, _ *Request) (*Decision, error) {
		close(a)
		<-b
		return nil, nil
	}})
	mustRegister(t, c, Registration{Plugin: "vb", Stage: events.StageIntake, Mode: ModeValidate, Timeout: 5 * time.Second}, bound{func(ctx context.Context, _ *Request) (*Decision, error) {
		close(b)
		<-a
		return nil, nil
	}})
	out, err = c.Run(context.Background(), intakeEvent(t, "hi"))
	if err != nil || out.Decision != Allow || len(out.Records) != 2 || out.Records[0].Failure != nil || out.Records[1].Failure != nil {
		t.Fatalf("validators: %+v, %v", out, err)
	}
}
