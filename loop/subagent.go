package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/record"
)

// Sub-agents. An agent that lists the agents it may call gets the Task tool
// (Claude Code's name and arguments: description, prompt, subagent_type).
// A call of it, after its tool.before, fires subagent.before on the parent
// run (interceptable: modify the instruction, deny), then runs the child as
// a run of its own (its own run and session, its events carrying the
// parent's ids as lineage extensions; every hook fires inside it as in any
// run), then subagent.after (or subagent.failed), and the child's answer
// is the Task call's result. The child's ids are recorded in
// subagent.before before it starts, so a parent resumed after a crash
// resumes the same child (or takes its recorded result): a finished child
// never runs again.

// TaskTool is the name of the tool that calls a sub-agent.
const TaskTool = "Task"

// DefaultMaxDepth bounds how deep sub-agents nest.
const DefaultMaxDepth = 3

// Subagent is an agent another may call.
type Subagent struct {
	// ID is the agent's id.
	ID string
	// Description says what it is for (the model reads it).
	Description string
}

// Team finds the engines of agents by id, so an agent's child runs run on
// the child agent's engine. Add every agent's engine. It is safe for
// concurrent use.
type Team struct {
	mu sync.RWMutex
	m  map[string]*Engine
}

// NewTeam returns an empty team.
func NewTeam() *Team { return &Team{m: map[string]*Engine{}} }

// Add sets the engine of agent id.
func (t *Team) Add(id string, e *Engine) {
	t.mu.Lock()
	t.m[id] = e
	t.mu.Unlock()
}

// Engine returns the engine of agent id, or nil.
func (t *Team) Engine(id string) *Engine {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m[id]
}

// taskSpec is the Task tool as the model sees it.
func taskSpec(subs []Subagent) events.ToolSpec {
	var desc strings.Builder
	desc.WriteString("Hands a task to another agent and returns its answer. The agents you may call:\n")
	for _, s := range subs {
		fmt.Fprintf(&desc, "- %s: %s\n", s.ID, s.Description)
	}
	enum, _ := json.Marshal(subagentIDs(subs))
	params := `{"type":"object","properties":{` +
		`"description":{"type":"string","description":"A short (3-5 word) description of the task"},` +
		`"prompt":{"type":"string","description":"The task for the agent to perform"},` +
		`"subagent_type":{"type":"string","description":"The agent to hand the task to","enum":` + string(enum) + `}},` +
		`"required":["description","prompt","subagent_type"]}`
	return events.ToolSpec{Name: TaskTool, Description: strings.TrimSpace(desc.String()), Parameters: json.RawMessage(params)}
}

// taskArgs are the Task tool's arguments.
type taskArgs struct {
	Description  string `json:"description"`
	Prompt       string `json:"prompt"`
	SubagentType string `json:"subagent_type"`
}

// callSubagent runs a Task call: subagent.before, the child run,
// subagent.after. A call that cannot be made gives an error result (and
// subagent.failed); only a failure to record stops the parent.
func (r *run) callSubagent(ctx context.Context, call events.ToolCall) (events.ToolResult, error) {
	var a taskArgs
	dec := json.NewDecoder(bytes.NewReader(call.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil || a.Prompt == "" || a.SubagentType == "" {
		msg := "Task wants {\"description\", \"prompt\", \"subagent_type\"}"
		if err != nil {
			msg += ": " + err.Error()
		}
		return r.subagentFailed(ctx, call, a.SubagentType, "", msg)
	}
	if !r.eng.callable(a.SubagentType) {
		return r.subagentFailed(ctx, call, a.SubagentType, "", fmt.Sprintf("agent %q is not one this agent may call (%s)", a.SubagentType, strings.Join(subagentIDs(r.eng.cfg.Subagents), ", ")))
	}
	depth := r.req.Depth + 1
	if depth > r.eng.cfg.MaxDepth {
		return r.subagentFailed(ctx, call, a.SubagentType, "", fmt.Sprintf("sub-agents nest at most %d deep", r.eng.cfg.MaxDepth))
	}
	child := events.NewID()
	sb := events.SubagentBefore{
		AgentID: a.SubagentType, Instruction: a.Prompt, Description: a.Description, CallID: call.ID,
		SessionID: child, RunID: child, Depth: depth,
	}
	hooked, out, err := intercepted(ctx, r, stage{stage: events.StageSubagentBefore, subject: a.SubagentType, sync: true}, sb, nil)
	if err != nil {
		return events.ToolResult{}, err
	}
	if out.Decision == interceptors.Deny {
		return r.subagentFailed(ctx, call, a.SubagentType, child, "denied: "+describe(out))
	}
	// Only the instruction may change; the rest is the loop's.
	sb.Instruction = hooked.Instruction
	return r.runChild(ctx, call, &sb)
}

// runChild runs (or resumes, or reads the end of) the child run sb
// recorded, and records how it ended.
func (r *run) runChild(ctx context.Context, call events.ToolCall, sb *events.SubagentBefore) (events.ToolResult, error) {
	eng := r.eng.cfg.Team.Engine(sb.AgentID)
	if eng == nil {
		return r.subagentFailed(ctx, call, sb.AgentID, sb.RunID, fmt.Sprintf("agent %q is not served by this worker", sb.AgentID))
	}
	res, err := eng.Run(ctx, &events.RunRequest{
		RunID: sb.RunID, AgentID: sb.AgentID, SessionID: sb.SessionID, Prompt: sb.Instruction,
		ParentAgentID: r.req.AgentID, ParentSessionID: r.req.SessionID, ParentRunID: r.req.RunID, Depth: sb.Depth,
		Traceparent: r.toolTrace(call.ID),
	})
	switch {
	case errors.Is(err, ErrUnrecorded), errors.Is(err, ErrLostRun), ctx.Err() != nil:
		if err == nil {
			err = ctx.Err()
		}
		return events.ToolResult{}, fmt.Errorf("sub-agent %s run %s: %w", sb.AgentID, sb.RunID, err)
	case err != nil && (res == nil || !res.Ended):
		return r.subagentFailed(ctx, call, sb.AgentID, sb.RunID, err.Error())
	case res.Reason == ReasonWaiting:
		return events.ToolResult{}, fmt.Errorf("%w: sub-agent %s run %s waits for approval", errChildWaiting, sb.AgentID, sb.RunID)
	}
	r.usage = r.usage.Add(res.Usage)
	after := events.SubagentAfter{AgentID: sb.AgentID, SessionID: sb.SessionID, RunID: sb.RunID, Answer: res.Answer,
		Success: res.Reason == events.ReasonDone, Reason: res.Reason, CallID: call.ID, Usage: res.Usage}
	if err := r.emit(ctx, events.StageSubagentAfter, after, sb.AgentID); err != nil {
		return events.ToolResult{}, err
	}
	return subagentResult(call, &after, res.Detail), nil
}

// errChildWaiting stops a parent whose child waits for a human: the parent
// waits too, and goes on when the child's end resumes it.
var errChildWaiting = errors.New("loop: a sub-agent waits for approval")

func subagentResult(call events.ToolCall, a *events.SubagentAfter, detail string) events.ToolResult {
	res := events.ToolResult{CallID: call.ID, Name: call.Name, Content: a.Answer}
	if !a.Success {
		res.IsError = true
		res.Content = fmt.Sprintf("error: agent %s ended %s", a.AgentID, a.Reason)
		if detail != "" {
			res.Content += ": " + detail
		}
		if a.Answer != "" {
			res.Content += "\n" + a.Answer
		}
	}
	return res
}

// subagentFailed records subagent.failed and gives the model the error.
func (r *run) subagentFailed(ctx context.Context, call events.ToolCall, agent, child, why string) (events.ToolResult, error) {
	if err := r.emit(ctx, events.StageSubagentFailed, events.SubagentFailed{AgentID: agent, Error: why, CallID: call.ID, RunID: child}, agent); err != nil {
		return events.ToolResult{}, err
	}
	return errorResult(call, why), nil
}

// resumeSubagent carries on a Task call whose worker stopped after its
// tool.before: from what its subagent events recorded.
func (r *run) resumeSubagent(ctx context.Context, cs *record.Call) (events.ToolResult, error) {
	if res, ok := subagentEnd(cs); ok {
		return res, nil
	}
	if cs.SubBefore != nil {
		return r.runChild(ctx, cs.Before.Call, cs.SubBefore)
	}
	return r.callSubagent(ctx, cs.Before.Call)
}

// subagentEnd is the result of a Task call whose sub-agent's end is
// recorded (subagent.failed or subagent.after); ok is false when none is.
func subagentEnd(cs *record.Call) (res events.ToolResult, ok bool) {
	call := cs.Before.Call
	switch {
	case cs.SubFailed != nil:
		return errorResult(call, cs.SubFailed.Error), true
	case cs.SubAfter != nil:
		return subagentResult(call, cs.SubAfter, ""), true
	}
	return events.ToolResult{}, false
}

func (e *Engine) callable(id string) bool {
	return slices.ContainsFunc(e.cfg.Subagents, func(s Subagent) bool { return s.ID == id })
}

// subagentIDs lists the ids of subs.
func subagentIDs(subs []Subagent) []string {
	ids := make([]string, len(subs))
	for i, s := range subs {
		ids[i] = s.ID
	}
	return ids
}
