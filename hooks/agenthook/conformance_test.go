package agenthook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/agenthook"
	"github.com/hookbus/hookbus/hooks/prompt"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/interceptors/interceptorstest"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
)

// TestConformance runs the conformance suite on agent hooks: each case's
// interceptor is the sub-agent's model, which reads the event back from
// its task, asks the interceptor and ends the run with its decision as a
// verdict. A panic of the model ends the child run with run.failed, so it
// is recorded as an error. What a verdict cannot say is declared lacking.
func TestConformance(t *testing.T) {
	interceptorstest.Run(t, func(t *testing.T, reg interceptors.Registration, ic interceptors.Interceptor) interceptors.Interceptor {
		j := looptest.New()
		h, err := agenthook.New(agenthook.Config{Prompt: prompt.Arguments, Emitter: j, History: j, Root: t.TempDir(),
			Model: &model{fn: func(ctx context.Context, mr *loop.ModelRequest) (*loop.ModelResponse, error) {
				text, err := askInterceptor(ctx, reg, ic, mr.Messages[len(mr.Messages)-1].Content)
				if err != nil {
					return nil, err
				}
				return answer(text), nil
			}}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}, interceptorstest.Features{PanicKind: events.FailError, Lacks: interceptorstest.AnswerModify | interceptorstest.AnswerMock |
		interceptorstest.AnswerAsk | interceptorstest.AnswerContext | interceptorstest.AnswerExtras | interceptorstest.AnswerBareStop})
}

// askInterceptor reads the event out of input (prompt.Input JSON), asks ic
// and returns its decision as a verdict.
func askInterceptor(ctx context.Context, reg interceptors.Registration, ic interceptors.Interceptor, input string) (string, error) {
	var in prompt.Input
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return "", fmt.Errorf("the task is not the event's JSON: %v", err)
	}
	ev := &events.Event{
		ID: in.EventID, Stage: events.Stage(in.HookEventName), Source: "conformance", Time: time.Now(), Subject: in.Subject,
		AgentID: in.AgentID, SessionID: in.SessionID, RunID: in.RunID, Step: in.Step, Data: in.Data,
	}
	dl, _ := ctx.Deadline()
	d, err := ic.Intercept(ctx, &interceptors.Request{Stage: ev.Stage, Event: ev, Registration: reg, Deadline: dl})
	if err != nil {
		return "", err
	}
	v := prompt.Verdict{OK: d == nil || d.Kind == interceptors.Allow}
	switch {
	case d == nil:
	case d.Kind == interceptors.Allow, d.Kind == interceptors.Deny, d.Kind == interceptors.Stop:
		v.Reason = d.Reason
	case d.Kind == interceptors.Continue:
		v.Reason = d.Context
	default:
		return "", fmt.Errorf("a verdict cannot say %s", d.Kind)
	}
	b, _ := json.Marshal(v)
	return string(b), nil
}
