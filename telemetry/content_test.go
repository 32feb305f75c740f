package telemetry_test

import (
	"encoding/json"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/telemetry"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// genAIMsg is a message of gen_ai.input.messages / gen_ai.output.messages
// as a trace backend reads it.
type genAIMsg struct {
	Role  string `json:"role"`
	Parts []struct {
		Type      string          `json:"type"`
		Content   string          `json:"content"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Response  *string         `json:"response"`
	} `json:"parts"`
	FinishReason string `json:"finish_reason"`
}

func messagesOf(t *testing.T, s *tracepb.Span, key string) []genAIMsg {
	t.Helper()
	raw := str(s, key)
	if raw == "" {
		return nil
	}
	var out []genAIMsg
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("span %q %s is not JSON messages: %v: %s", s.Name, key, err, raw)
	}
	return out
}

// With CaptureContent the chat spans carry what the model was given and
// what it answered, and the tool spans their arguments and results, as
// the GenAI conventions lay them out; even when the observer restarted
// between a model call's start and its end. Without it, none of that.
func TestTracesCaptureContent(t *testing.T) {
	ctx := ctxT(t)
	_, nc := bustest.Start(t)
	b := bustest.Provision(t, nc)
	res := runTeam(t, ctx, b, nil, "s1")
	var evs []*events.Event
	if _, err := b.Replay(ctx, bus.Filter{}, func(e *events.Event) error { evs = append(evs, e); return nil }); err != nil {
		t.Fatal(err)
	}
	// The first Traces stops right after the planner's first
	// context.assembled: the second reads the messages back.
	cut := -1
	for i, e := range evs {
		if e.Stage == events.StageContextAssembled && e.RunID == res.RunID {
			cut = i + 1
			break
		}
	}

	for _, capture := range []bool{true, false} {
		rc := newReceiver(t)
		tr1, err := telemetry.NewTraces(telemetry.TracesConfig{Exporter: rc.exporter(t), Lookup: b, CaptureContent: capture})
		if err != nil {
			t.Fatal(err)
		}
		tr2, err := telemetry.NewTraces(telemetry.TracesConfig{Exporter: rc.exporter(t), Lookup: b, CaptureContent: capture})
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			tr := tr1
			if i >= cut {
				tr = tr2
			}
			if err := tr.Handle(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		chats, tools := 0, 0
		for _, s := range rc.got() {
			in, out := messagesOf(t, s, "gen_ai.input.messages"), messagesOf(t, s, "gen_ai.output.messages")
			args, result := attr(s, "gen_ai.tool.call.arguments"), attr(s, "gen_ai.tool.call.result")
			if !capture {
				if in != nil || out != nil || args != nil || result != nil {
					t.Errorf("capture off: span %q carries content", s.Name)
				}
				continue
			}
			switch str(s, "gen_ai.operation.name") {
			case "chat":
				chats++
				if len(in) == 0 || in[len(in)-1].Role == "assistant" || len(out) != 1 || out[0].Role != "assistant" || out[0].FinishReason == "" {
					t.Errorf("chat span %q step %d: input %+v output %+v", s.Name, num(s, "hookbus.step"), in, out)
				}
				if str(s, "hookbus.run.id") == res.RunID && num(s, "hookbus.step") == 1 {
					// The planner's first call: the user's prompt in, two
					// tool calls out.
					last := in[len(in)-1]
					if last.Role != "user" || len(last.Parts) != 1 || last.Parts[0].Type != "text" || last.Parts[0].Content != "go" {
						t.Errorf("step 1 input ends with %+v, want the user's prompt", last)
					}
					if p := out[0].Parts; out[0].FinishReason != "tool_call" || len(p) != 2 || p[0].Type != "tool_call" || p[0].Name != "calculator" ||
						string(p[0].Arguments) != `{"expression":"6*7"}` || p[0].ID == "" || p[1].Name != "clock" {
						t.Errorf("step 1 output %+v, want the calculator's and the clock's calls", out[0])
					}
				}
				if str(s, "hookbus.run.id") == res.RunID && num(s, "hookbus.step") == 2 {
					// The second call sees the tools' responses.
					responses := 0
					for _, m := range in {
						if m.Role == "tool" && len(m.Parts) == 1 && m.Parts[0].Type == "tool_call_response" && m.Parts[0].Response != nil && m.Parts[0].ID != "" {
							responses++
						}
					}
					if responses != 2 {
						t.Errorf("step 2 input has %d tool responses, want 2: %+v", responses, in)
					}
				}
			case "execute_tool":
				tools++
				if result == nil {
					t.Errorf("tool span %q has no gen_ai.tool.call.result", s.Name)
				}
				if str(s, "gen_ai.tool.name") == "calculator" && (args.GetStringValue() != `{"expression":"6*7"}` || result.GetStringValue() != "42") {
					t.Errorf("calculator span: arguments %v result %v", args, result)
				}
			}
		}
		if capture && (chats != 5 || tools != 4) {
			t.Errorf("%d chat and %d tool spans with content, want 5 and 4", chats, tools)
		}
	}
}
