package fakellm_test

import (
	"context"
	"testing"

	"github.com/hookbus/hookbus/internal/fakellm"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// A streamed response reads back, through the official SDK's streaming
// client, as the blocks it was made of: the deltas add up to what the done
// events and response.completed hold, the events numbered in order.
func TestResponsesStream(t *testing.T) {
	srv := fakellm.Start(t, &fakellm.Script{Steps: []fakellm.Step{
		fakellm.ResponsesStream("gpt-5.1-codex", fakellm.Text("Let me look."),
			fakellm.ToolUse("call_1", "exec_command", map[string]any{"cmd": "ls -la /tmp && echo a-longer-command"})),
	}})
	client := openai.NewClient(option.WithBaseURL(srv.URL()+"/v1"), option.WithAPIKey("test"))
	stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "gpt-5.1-codex", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	var text, args string
	var completed *responses.Response
	var n int64
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != n {
			t.Fatalf("event %d (%s) has sequence_number %d", n, ev.Type, ev.SequenceNumber)
		}
		n++
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.function_call_arguments.delta":
			args += ev.Delta
		case "response.function_call_arguments.done":
			if ev.Arguments != args {
				t.Fatalf("arguments done %s, deltas %s", ev.Arguments, args)
			}
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			completed = &r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if completed == nil || completed.Status != "completed" || completed.Usage.TotalTokens == 0 || len(completed.Output) != 2 {
		t.Fatalf("response.completed: %+v", completed)
	}
	call := completed.Output[1].AsFunctionCall()
	if text != "Let me look." || completed.OutputText() != text || call.CallID != "call_1" || call.Name != "exec_command" ||
		call.Arguments != `{"cmd":"ls -la /tmp \u0026\u0026 echo a-longer-command"}` || call.Arguments != args {
		t.Fatalf("text %q (%q), call %+v, deltas %s", text, completed.OutputText(), call, args)
	}
}

// Its events hold only what the recorded Responses API stream holds.
func TestResponsesStreamShape(t *testing.T) {
	sameShape(t, []fakellm.Step{
		fakellm.ResponsesStream("gpt-5.1-codex", fakellm.ToolUse("call_1", "exec_command", map[string]any{"cmd": "ls"})),
		fakellm.ResponsesStream("gpt-5.1-codex", fakellm.Text("Two files.")),
	}, "openai/responses_function_call")
}
