package interceptorstest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Factory wraps an in-process interceptor the way an implementation runs
// it: the identity for in-process; a remote implementation serves ic under
// reg (stopping it with t.Cleanup) and returns a client that calls it.
type Factory func(t *testing.T, reg interceptors.Registration, ic interceptors.Interceptor) interceptors.Interceptor

// Features are the real differences between implementations.
type Features struct {
	// PanicKind is the failure kind a panicking interceptor is recorded
	// with. Empty means events.FailPanic (in-process); a remote service
	// recovers the panic and replies with an error, so a remote
	// implementation sets events.FailError.
	PanicKind string
	// Lacks lists the answers the implementation cannot give: a prompt or
	// agent hook answers allow or deny (stop, continue) with a reason and
	// nothing else. The cases that need one of them are skipped, saying
	// which.
	Lacks Answers

	// What a hook protocol other than hookbus' own cannot carry (Claude
	// Code's, spoken by command and http hooks). The zero value lacks
	// nothing; a case that needs what an implementation lacks is skipped,
	// saying why.

	// Stages lists the stages the implementation intercepts; nil means
	// every stage.
	Stages []events.Stage
	// NoMock: it cannot answer mock.
	NoMock bool
	// NoAnnotations: its decisions carry no annotations, nor a reason with
	// allow.
	NoAnnotations bool
	// NoPayloadReplace: it cannot replace an intake payload (it may only
	// add to the prompt).
	NoPayloadReplace bool
	// NoPatchReply: it sends no RFC 6902 patches, so a patch the payload
	// refuses is not its bad reply.
	NoPatchReply bool
	// NoStageCheck: it has no way to send a decision its stage refuses.
	NoStageCheck bool
}

// lacks says why an implementation with features f cannot run a case that
// uses stages and needs what need reports; "" when it can.
func (f Features) lacks(stages []events.Stage, need func(Features) string) string {
	if f.Stages != nil {
		for _, st := range stages {
			if !slices.Contains(f.Stages, st) {
				return "the implementation does not intercept " + string(st)
			}
		}
	}
	if need != nil {
		return need(f)
	}
	return ""
}

// Needs of the cases, for Features.lacks.
func needMock(f Features) string { return when(f.NoMock, "it cannot answer mock") }
func needAnnotations(f Features) string {
	return when(f.NoAnnotations, "its decisions carry no annotations")
}
func needReplace(f Features) string {
	return when(f.NoPayloadReplace, "it cannot replace an intake payload")
}
func needPatchReply(f Features) string { return when(f.NoPatchReply, "it sends no patches") }
func needStageCheck(f Features) string {
	return when(f.NoStageCheck, "it cannot send a decision its stage refuses")
}
func when(lacking bool, why string) string {
	if lacking {
		return why
	}
	return ""
}

// Answers is a set of answers beyond allow and deny with a reason.
type Answers uint

// The answers a case may need.
const (
	// AnswerModify: modify, with data or a patch.
	AnswerModify Answers = 1 << iota
	// AnswerMock: mock, any decision of the interceptor's choosing (a mock
	// on a stage that refuses it is a bad reply).
	AnswerMock
	// AnswerAsk: ask.
	AnswerAsk
	// AnswerContext: context for the model on tool.after.
	AnswerContext
	// AnswerExtras: warnings and annotations of the interceptor's choosing.
	AnswerExtras
	// AnswerBareStop: a stop without a reason (the chain names the plugin).
	AnswerBareStop
)

var answerNames = []string{"modify", "mock", "ask", "context", "warnings and annotations", "a stop without a reason"}

// String names the answers of the set.
func (a Answers) String() string {
	var names []string
	for i, n := range answerNames {
		if a&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Identity is the Factory of in-process interceptors.
func Identity(_ *testing.T, _ interceptors.Registration, ic interceptors.Interceptor) interceptors.Interceptor {
	return ic
}

// Run runs every conformance case as a subtest of t, one after another.
func Run(t *testing.T, f Factory, features Features) {
	if features.PanicKind == "" {
		features.PanicKind = events.FailPanic
	}
	privileged := []events.Stage{events.StageContextAssembled, events.StageModelResponded}
	for _, tc := range []struct {
		name    string
		run     func(*harness)
		stages  []events.Stage        // the stages it intercepts besides intake, tool.before, tool.after and stop
		needs   func(Features) string // what else it needs
		answers Answers               // the answers beyond allow and deny it needs
	}{
		{"RegistrationOrder", testRegistrationOrder, nil, nil, 0},
		{"ExplicitOrder", testExplicitOrder, nil, nil, 0},
		{"Sequential", testSequential, nil, nil, 0},
		{"PipelineData", testPipelineData, nil, needReplace, AnswerModify},
		{"PipelinePatch", testPipelinePatch, nil, nil, AnswerModify},
		{"InputNotMutated", testInputNotMutated, nil, needReplace, AnswerModify},
		{"PrivilegedRejected", testPrivilegedRejected, privileged, nil, 0},
		{"PrivilegedBuiltin", testPrivilegedBuiltin, privileged, nil, AnswerModify},
		{"PrivilegedGranted", testPrivilegedGranted, privileged, nil, AnswerModify},
		{"Timeout", testTimeout, nil, nil, 0},
		{"Deadline", testDeadline, nil, nil, 0},
		{"ErrorIsolated", testErrorIsolated, nil, nil, 0},
		{"PanicIsolated", testPanicIsolated, nil, nil, 0},
		{"DenyEnds", testDenyEnds, nil, nil, 0},
		{"Mock", testMock, nil, needMock, AnswerMock},
		{"AskStopContinue", testAskStopContinue, []events.Stage{events.StageStepStarted}, nil, AnswerAsk | AnswerBareStop},
		{"ToolAfterContext", testToolAfterContext, nil, nil, AnswerContext | AnswerModify},
		{"FailClosed", testFailClosed, nil, nil, 0},
		{"FailOpen", testFailOpen, nil, nil, 0},
		{"ValidatingAfterMutating", testValidatingAfterMutating, nil, nil, AnswerModify},
		{"ValidatingParallel", testValidatingParallel, nil, nil, 0},
		{"ValidatingDenyOverAsk", testValidatingDenyOverAsk, nil, nil, AnswerAsk},
		{"Matchers", testMatchers, nil, nil, 0},
		{"BadReplyDisallowedDecision", testBadReplyDisallowed, nil, needStageCheck, AnswerMock},
		{"BadReplyValidatingModify", testBadReplyValidatingModify, nil, needReplace, AnswerModify},
		{"BadReplyPatch", testBadReplyPatch, nil, needPatchReply, AnswerModify},
		{"WarningsAnnotations", testWarningsAnnotations, nil, needAnnotations, AnswerExtras},
		{"LargePayload", testLargePayload, nil, needPatchReply, AnswerModify | AnswerContext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if why := features.lacks(tc.stages, tc.needs); why != "" {
				t.Skip("not applicable: " + why)
			}
			if lacks := tc.answers & features.Lacks; lacks != 0 {
				t.Skipf("needs %s, which this implementation cannot answer", lacks)
			}
			tc.run(&harness{t: t, f: f, features: features, prefix: strings.ToLower(tc.name)})
		})
	}
}

type harness struct {
	t        *testing.T
	f        Factory
	features Features
	prefix   string // makes plugin names unique per case
}

func (h *harness) plugin(name string) string { return h.prefix + "-" + name }

func (h *harness) chain(opts ...interceptors.Option) *interceptors.Chain {
	return interceptors.NewChain(opts...)
}

// register registers fn, wrapped by the factory, as h.plugin(reg.Plugin).
func (h *harness) register(c *interceptors.Chain, reg interceptors.Registration, fn interceptors.Func) {
	h.t.Helper()
	if err := h.tryRegister(c, reg, fn); err != nil {
		h.t.Fatalf("Register(%s on %s): %v", reg.Plugin, reg.Stage, err)
	}
}

func (h *harness) tryRegister(c *interceptors.Chain, reg interceptors.Registration, fn interceptors.Func) error {
	reg.Plugin = h.plugin(reg.Plugin)
	unregister, err := c.Register(reg, h.f(h.t, reg, fn))
	if err != nil {
		return err
	}
	h.t.Cleanup(unregister)
	return nil
}

func (h *harness) run(c *interceptors.Chain, ev *events.Event) *interceptors.ChainResult {
	h.t.Helper()
	out, err := c.Run(context.Background(), ev)
	if err != nil {
		h.t.Fatalf("Run: %v", err)
	}
	return out
}

// event builds an event of stage with payload; tool is its subject.
func (h *harness) event(stage events.Stage, tool string, payload any) *events.Event {
	h.t.Helper()
	ev, err := events.New(stage, events.Meta{
		Source: "hookbus/interceptorstest", AgentID: "agent-1", SessionID: "session-1",
		RunID: events.NewID(), Step: 1, Seq: 1, Subject: tool,
	}, payload)
	if err != nil {
		h.t.Fatalf("events.New: %v", err)
	}
	return ev
}

func (h *harness) toolBefore(tool, args string) *events.Event {
	return h.event(events.StageToolBefore, tool, events.ToolBefore{Call: events.ToolCall{ID: "call-1", Name: tool, Arguments: json.RawMessage(args)}})
}

func (h *harness) intake(prompt string) *events.Event {
	return h.event(events.StageIntake, "", events.Intake{Prompt: prompt})
}

// plugins lists the records' plugins, without the case prefix.
func (h *harness) plugins(out *interceptors.ChainResult) []string {
	var names []string
	for _, r := range out.Records {
		names = append(names, strings.TrimPrefix(r.Plugin, h.prefix+"-"))
	}
	return names
}

func (h *harness) wantPlugins(out *interceptors.ChainResult, want ...string) {
	h.t.Helper()
	if got := h.plugins(out); !slices.Equal(got, want) {
		h.t.Fatalf("records of %v, want %v", got, want)
	}
}

func (h *harness) wantDecision(out *interceptors.ChainResult, want interceptors.Kind) {
	h.t.Helper()
	if out.Decision != want {
		h.t.Fatalf("decision %s (reason %q), want %s", out.Decision, out.Reason, want)
	}
}

func (h *harness) wantFailure(rec interceptors.CallRecord, kind string, sentinel error, outcome string) {
	h.t.Helper()
	f := rec.Failure
	switch {
	case f == nil:
		h.t.Fatalf("%s: no failure recorded (decision %s)", rec.Plugin, rec.Decision)
	case f.Kind != kind:
		h.t.Fatalf("%s: failure kind %s (%v), want %s", rec.Plugin, f.Kind, f.Err, kind)
	case !errors.Is(f.Err, sentinel):
		h.t.Fatalf("%s: failure %v does not match %v", rec.Plugin, f.Err, sentinel)
	case f.Outcome != outcome:
		h.t.Fatalf("%s: failure outcome %s, want %s", rec.Plugin, f.Outcome, outcome)
	}
	var he *interceptors.CallError
	if !errors.As(f.Err, &he) || he.Plugin != rec.Plugin || he.Stage != rec.Stage {
		h.t.Fatalf("%s: failure %#v is not a *HookError naming the plugin and stage", rec.Plugin, f.Err)
	}
	if st, p := rec.Audit(); st != events.StageHookFailed || p.(events.HookFailed).Kind != kind {
		h.t.Fatalf("%s: audit %s %+v, want hook.failed of kind %s", rec.Plugin, st, p, kind)
	}
}

// calls counts the calls of a handler.
type calls struct{ n atomic.Int32 }

func (c *calls) allow(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
	c.n.Add(1)
	return nil, nil
}

// trace records the order in which handlers were called.
type trace struct {
	mu    sync.Mutex
	names []string
}

func (tr *trace) hook(name string, d *interceptors.Decision) interceptors.Func {
	return func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		tr.mu.Lock()
		tr.names = append(tr.names, name)
		tr.mu.Unlock()
		return d, nil
	}
}

func (tr *trace) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.names)
}

// blockUntilCleanup returns a handler that ignores ctx and blocks until the
// test ends.
func blockUntilCleanup(t *testing.T) interceptors.Func {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(context.Context, *interceptors.Request) (*interceptors.Decision, error) {
		<-release
		return &interceptors.Decision{Kind: interceptors.Deny, Reason: "too late"}, nil
	}
}

func payloadOf[T any](t *testing.T, data json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("payload %s: %v", data, err)
	}
	return v
}

// within fails the test if d exceeds max: interception must never hang.
func within(t *testing.T, d, max time.Duration, what string) {
	t.Helper()
	if d > max {
		t.Fatalf("%s took %s (bound %s)", what, d, max)
	}
}
