package fakellm_test

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/hookbus/hookbus/internal/fakellm"
)

// A streamed message reads back, through the official SDK's streaming
// client, as the blocks it was made of.
func TestAnthropicStream(t *testing.T) {
	srv := fakellm.Start(t, &fakellm.Script{Steps: []fakellm.Step{
		fakellm.AnthropicStream("claude-test", fakellm.Text("Let me look."),
			fakellm.ToolUse("toolu_1", "Bash", map[string]any{"command": "ls -la /tmp", "description": "List /tmp"})),
	}})
	client := anthropic.NewClient(option.WithBaseURL(srv.URL()), option.WithAPIKey("test"))
	stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 2 || msg.Content[0].Text != "Let me look." ||
		msg.Content[1].Name != "Bash" || string(msg.Content[1].Input) != `{"command":"ls -la /tmp","description":"List /tmp"}` {
		t.Fatalf("message: %+v", msg)
	}
}

// Its events hold only what the recorded Messages API stream holds.
func TestAnthropicStreamShape(t *testing.T) {
	sameShape(t, []fakellm.Step{
		fakellm.AnthropicStream("claude-test", fakellm.Text("Let me work that out."),
			fakellm.ToolUse("toolu_1", "calculator", map[string]any{"expression": "6*7"})),
	}, "anthropic/streaming", "input")
}
