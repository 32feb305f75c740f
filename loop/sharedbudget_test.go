package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/budgets"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/tools"
)

// stepModel calls the clock on its first steps and answers on step steps;
// every call uses the same tokens.
type stepModel struct {
	steps  int
	tokens int
}

func (m stepModel) Generate(_ context.Context, req *loop.ModelRequest) (*loop.ModelResponse, error) {
	msg := events.Message{Role: events.RoleAssistant, Content: "done"}
	if req.Step < m.steps {
		msg = events.Message{Role: events.RoleAssistant, Content: "checking",
			ToolCalls: []events.ToolCall{{ID: fmt.Sprintf("c%d", req.Step), Name: "clock", Arguments: json.RawMessage(`{}`)}}}
	}
	return &loop.ModelResponse{Message: msg, Usage: events.Usage{InputTokens: m.tokens / 2, OutputTokens: m.tokens - m.tokens/2}}, nil
}

// A budget shared by two workers (two engines on two connections) running
// 50 runs at once is never passed by more than one step: every charge lands
// (no update lost between workers), and the runs that found no room ended
// with cost_limit naming the budget.
func TestSharedBudgetAcrossTwoWorkers(t *testing.T) {
	const (
		runs, steps, stepTokens = 50, 3, 100
		limit                   = 2000
	)
	srv, nc := bustest.Start(t)
	b1 := bustest.Provision(t, nc)
	b2, err := bus.New(bustest.Conn(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := budgets.New(b1).SetLimit(ctx, budgets.Limit{Agent: "a", Period: 24 * time.Hour, Tokens: limit}); err != nil {
		t.Fatal(err)
	}
	engines := make([]*loop.Engine, 2)
	for i, b := range []*bus.Bus{b1, b2} {
		engines[i] = newEngine(t, b, loop.Config{
			Model: stepModel{steps: steps, tokens: stepTokens}, Tools: tools.Builtin(""),
			SharedBudget: budgets.New(b), MaxSteps: steps + 1,
		})
	}

	results := make([]*loop.Result, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			id := fmt.Sprintf("r%02d", i)
			res, err := engines[i%2].Run(ctx, &events.RunRequest{RunID: id, AgentID: "a", SessionID: id, Prompt: "go"})
			if err != nil {
				t.Errorf("run %s: %v", id, err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	used, done, limited := 0, 0, 0
	for _, res := range results {
		used += res.Usage.InputTokens + res.Usage.OutputTokens
		switch res.Reason {
		case events.ReasonDone:
			done++
		case events.ReasonCostLimit:
			limited++
			if !strings.Contains(res.Detail, "shared budget of agent a per 24h0m0s") {
				t.Errorf("cost_limit detail %q does not name the budget", res.Detail)
			}
		default:
			t.Errorf("run %s ended %s: %s", res.RunID, res.Reason, res.Detail)
		}
	}
	t.Logf("%d runs done, %d ended at the budget, %d tokens used of %d", done, limited, used, limit)
	if used > limit+stepTokens {
		t.Fatalf("used %d tokens: passes the budget of %d by more than one step (%d)", used, limit, stepTokens)
	}
	if limited == 0 || used < limit-stepTokens {
		t.Fatalf("the budget was not used up: %d runs limited, %d tokens of %d used", limited, used, limit)
	}
	_, uses, err := budgets.New(b2).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(uses) != 1 || uses[0].Tokens != int64(used) || len(uses[0].Reserved) != 0 {
		t.Fatalf("recorded use %+v, runs used %d tokens", uses, used)
	}
}
