package agenthook_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/agenthook"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/looptest"
)

// model is a loop.Model of a function that records what it was asked.
type model struct {
	mu    sync.Mutex
	asked []*loop.ModelRequest
	fn    func(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error)
}

func (m *model) Generate(ctx context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	m.mu.Lock()
	m.asked = append(m.asked, req)
	m.mu.Unlock()
	return m.fn(ctx, req)
}

func (m *model) requests() []*loop.ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*loop.ModelRequest(nil), m.asked...)
}

func answer(text string) *loop.ModelResponse {
	return &loop.ModelResponse{Message: events.Message{Role: events.RoleAssistant, Content: text}, FinishReason: "stop"}
}

// root is a directory with a file the sub-agent may read.
func root(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "POLICY.md"), []byte("Deploys happen on weekdays only.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newHook(t *testing.T, cfg agenthook.Config) *agenthook.Hook {
	t.Helper()
	h, err := agenthook.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// parentEvent is a tool.before of the run being decided.
func parentEvent(t testing.TB, tool, args string) *events.Event {
	t.Helper()
	ev, err := events.New(events.StageToolBefore, events.Meta{
		Source: "agenthook-test", AgentID: "deployer", SessionID: "s1", RunID: events.NewID(), Step: 3, Seq: 9, Subject: tool,
	}, events.ToolBefore{Call: events.ToolCall{ID: "call_3_1", Name: tool, Arguments: json.RawMessage(args)}})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// run registers ic as reg on a new chain and runs ev through it.
func run(t *testing.T, reg interceptors.Registration, ic interceptors.Interceptor, ev *events.Event) *interceptors.ChainResult {
	t.Helper()
	if reg.Plugin == "" {
		reg.Plugin = "verifier"
	}
	reg.Stage = ev.Stage
	c := interceptors.NewChain()
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

// childRun returns the events of the run id in j.
func childRun(j *looptest.Journal, id string) []*events.Event {
	var out []*events.Event
	for _, e := range j.Events() {
		if e.RunID == id {
			out = append(out, e)
		}
	}
	return out
}

// terminal returns the run's terminal event, or nil.
func terminal(evs []*events.Event) *events.Event {
	for _, e := range evs {
		if e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed {
			return e
		}
	}
	return nil
}

// lastContext returns the messages of the run's last context.assembled:
// what its model saw last.
func lastContext(t *testing.T, evs []*events.Event) []events.Message {
	t.Helper()
	var ca events.ContextAssembled
	for _, e := range evs {
		if e.Stage == events.StageContextAssembled {
			if err := e.DecodeData(&ca); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ca.Messages
}
