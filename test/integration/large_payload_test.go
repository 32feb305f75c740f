package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// Large payloads: a tool result far larger than the server's max_payload
// (1 MiB) goes through a run, the audit trail and the next run's session
// rebuild whole. The bus claim-checks it (data in the object store, a
// dataref on the event); nobody above the bus has to know.

// largeResult is a 5 MiB tool result that JSON must escape here and there.
func largeResult() string {
	var sb strings.Builder
	sb.WriteString("\"héllo\" <big> result\n")
	for i := 0; sb.Len() < 5<<20; i++ {
		fmt.Fprintf(&sb, "line %08d\t", i)
	}
	sb.WriteString("END")
	return sb.String()
}

// largeModel calls the tool "bigfile" when the run's prompt starts with
// "fetch", and answers once the result is in; it notes, per run and step,
// how many tool messages carrying the whole result it was given.
type largeModel struct {
	want string
	mu   sync.Mutex
	seen map[string]int // "<run>/<step>" -> tool messages equal to want
}

func (m *largeModel) Generate(_ context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	whole, afterPrompt, prompt := 0, false, ""
	for _, msg := range req.Messages {
		switch {
		case msg.Role == events.RoleUser:
			prompt, afterPrompt = msg.Content, false
		case msg.Role == events.RoleTool:
			afterPrompt = true
			if msg.Content == m.want {
				whole++
			}
		}
	}
	m.mu.Lock()
	m.seen[fmt.Sprintf("%s/%d", req.RunID, req.Step)] = whole
	m.mu.Unlock()
	if strings.HasPrefix(prompt, "fetch") && !afterPrompt {
		return &loop.ModelResponse{Message: events.Message{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{
			{ID: "call_big", Name: "bigfile", Arguments: []byte(`{}`)},
		}}, FinishReason: "tool_calls", Model: "large"}, nil
	}
	return &loop.ModelResponse{Message: events.Message{Role: events.RoleAssistant,
		Content: fmt.Sprintf("saw %d whole results", whole)}, FinishReason: "stop", Model: "large"}, nil
}

func (m *largeModel) saw(run string, step int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen[fmt.Sprintf("%s/%d", run, step)]
}

func TestLargePayloadToolResult(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const agent, session = "big-agent", "big-session"
	want := largeResult()

	model := &largeModel{want: want, seen: map[string]int{}}
	calls := 0
	bigfile := loop.ToolFunc(events.ToolSpec{Name: "bigfile", Description: "returns 5 MiB"}, func(context.Context, json.RawMessage) (string, error) {
		calls++
		return want, nil
	})
	eng, err := loop.New(loop.Config{Emitter: b, History: b, Model: model, Tools: []loop.Tool{bigfile}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := eng.Run(ctx, &events.RunRequest{AgentID: agent, SessionID: session, Prompt: "fetch the big file"})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("run with a %d MiB tool result: %v, %d events", len(want)>>20, time.Since(start), res.Events)
	if res.Reason != events.ReasonDone || calls != 1 || res.Steps != 2 {
		t.Fatalf("run ended %s after %d steps, %d tool calls: %s %s", res.Reason, res.Steps, calls, res.Answer, res.Detail)
	}
	if model.saw(res.RunID, 2) != 1 {
		t.Fatalf("the model was not given the whole result at step 2 (answer %q)", res.Answer)
	}

	// In the stream the tool.after is a small message that points to the
	// result.
	s, err := b.JetStream().Stream(ctx, b.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.GetLastMsgForSubject(ctx, "hookbus.evt."+agent+"."+session+".tool.after")
	if err != nil {
		t.Fatal(err)
	}
	if len(raw.Data) != 0 || !strings.HasPrefix(raw.Header.Get("ce-dataref"), b.Names().Payloads+"/evt/") {
		t.Errorf("stored tool.after: %d bytes of body, ce-dataref %q", len(raw.Data), raw.Header.Get("ce-dataref"))
	}

	// An auditor's replay, through the binary, gets the result whole.
	start = time.Now()
	r := run(t, "observer", "replay", "--nats", srv.ClientURL(), "--agent", agent, "--session", session, "--json")
	if r.code != 0 {
		t.Fatalf("observer replay: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("observer replay --json: %v, %d bytes of output", time.Since(start), len(r.stdout))
	evs := jsonEvents(t, r.stdout)
	var after *events.ToolAfter
	for _, e := range evs {
		if e.Stage != events.StageToolAfter {
			continue
		}
		var p events.ToolAfter
		if err := e.DecodeData(&p); err != nil {
			t.Fatalf("replayed tool.after: %v", err)
		}
		if e.DataRef == "" {
			t.Errorf("replayed tool.after has no dataref")
		}
		after = &p
	}
	if after == nil || after.Result.Content != want {
		t.Fatalf("observer replay --json: tool.after missing or not whole (stderr %s)", r.stderr)
	}
	if !strings.Contains(r.stderr, fmt.Sprintf("%d events", len(evs))) || strings.Contains(r.stderr, "without their data") {
		t.Errorf("observer replay summary: %s", r.stderr)
	}

	// The session's next run rebuilds its history from the stream, the
	// result included.
	next, err := eng.Run(ctx, &events.RunRequest{AgentID: agent, SessionID: session, Prompt: "what did you read?"})
	if err != nil {
		t.Fatalf("next run: %v", err)
	}
	if next.Reason != events.ReasonDone || calls != 1 || model.saw(next.RunID, 1) != 1 {
		t.Fatalf("next run: %s, %d tool calls, the model saw %d whole results (%q)", next.Reason, calls, model.saw(next.RunID, 1), next.Answer)
	}
}
