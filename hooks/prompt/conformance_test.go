package prompt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/prompt"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/interceptors/interceptorstest"
	"github.com/hookbus/hookbus/loop"
)

// TestConformance runs the conformance suite on prompt hooks: each case's
// interceptor becomes the "model" of a prompt hook, which reads the event
// back from the prompt's JSON, asks the interceptor and answers its
// decision as a verdict. What a verdict cannot say (modify, mock, ask,
// context, warnings) is declared lacking.
func TestConformance(t *testing.T) {
	interceptorstest.Run(t, func(t *testing.T, reg interceptors.Registration, ic interceptors.Interceptor) interceptors.Interceptor {
		h, err := prompt.New(prompt.Config{Prompt: prompt.Arguments, Model: &model{fn: func(ctx context.Context, mr *loop.ModelRequest) (string, error) {
			return AskInterceptor(ctx, reg, ic, mr.Messages[len(mr.Messages)-1].Content)
		}}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}, interceptorstest.Features{Lacks: PromptLacks})
}

// PromptLacks is what a verdict cannot say.
const PromptLacks = interceptorstest.AnswerModify | interceptorstest.AnswerMock | interceptorstest.AnswerAsk |
	interceptorstest.AnswerContext | interceptorstest.AnswerExtras | interceptorstest.AnswerBareStop

// AskInterceptor reads the event out of input (prompt.Input JSON), asks ic
// and returns its decision as a verdict.
func AskInterceptor(ctx context.Context, reg interceptors.Registration, ic interceptors.Interceptor, input string) (string, error) {
	var in prompt.Input
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return "", fmt.Errorf("the prompt is not the event's JSON: %v", err)
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
	var v prompt.Verdict
	switch {
	case d == nil || d.Kind == interceptors.Allow:
		v.OK = true
		if d != nil {
			v.Reason = d.Reason
		}
	case d.Kind == interceptors.Deny, d.Kind == interceptors.Stop:
		v.Reason = d.Reason
	case d.Kind == interceptors.Continue:
		v.Reason = d.Context
	default:
		return "", fmt.Errorf("a verdict cannot say %s", d.Kind)
	}
	b, _ := json.Marshal(v)
	return "My verdict:\n```json\n" + string(b) + "\n```", nil
}
