package prompt_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
)

// model is a loop.Model of a function that records what it was asked.
type model struct {
	mu    sync.Mutex
	asked []*loop.ModelRequest
	fn    func(ctx context.Context, req *loop.ModelRequest) (string, error)
}

func (m *model) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	m.mu.Lock()
	m.asked = append(m.asked, req)
	m.mu.Unlock()
	text, err := m.fn(ctx, req)
	if err != nil {
		return nil, err
	}
	return &loop.ModelResponse{Message: events.Message{Role: events.RoleAssistant, Content: text}, Model: "test-model"}, nil
}

func (m *model) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.asked)
}

// userMessage is what the model was asked on call i.
func (m *model) userMessage(t *testing.T, i int) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if i >= len(m.asked) {
		t.Fatalf("the model was called %d times, not %d", len(m.asked), i+1)
	}
	msgs := m.asked[i].Messages
	return msgs[len(msgs)-1].Content
}

// replies returns a model that answers text.
func replies(text string) *model {
	return &model{fn: func(context.Context, *loop.ModelRequest) (string, error) { return text, nil }}
}

func event(t testing.TB, stage events.Stage, subject string, payload any) *events.Event {
	t.Helper()
	ev, err := events.New(stage, events.Meta{
		Source: "prompt-test", AgentID: "ops", SessionID: "s1", RunID: events.NewID(), Step: 2, Seq: 7, Subject: subject,
	}, payload)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func bashCall(t testing.TB, callID, command string) *events.Event {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"command": command})
	return event(t, events.StageToolBefore, "Bash", events.ToolBefore{Call: events.ToolCall{ID: callID, Name: "Bash", Arguments: args}})
}

// run registers ic on a new chain as reg and runs ev through it.
func run(t *testing.T, reg interceptors.Registration, ic interceptors.Interceptor, ev *events.Event) *interceptors.ChainResult {
	t.Helper()
	c := interceptors.NewChain()
	if reg.Plugin == "" {
		reg.Plugin = "judge"
	}
	if reg.Stage == "" {
		reg.Stage = ev.Stage
	}
	if _, err := c.Register(reg, ic); err != nil {
		t.Fatal(err)
	}
	out, err := c.Run(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Records) != 1 {
		t.Fatalf("%d records, want 1", len(out.Records))
	}
	return out
}
