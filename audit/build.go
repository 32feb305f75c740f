package audit

import (
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// runBuilder builds one run's items from its events, in ce-seq order.
type runBuilder struct {
	t          *RunTree
	hooks      map[string][]*HookCall // by the id of the event decided on
	ids        map[string]bool        // the run's event ids
	steps      map[int]*Item
	tools      map[string]*Item // by step/call id
	approvals  map[string]*Item // by call id
	subagents  map[string]*Item // by child run id, and by "call/"+call id
	compacting map[*Item]*Item  // the open compaction of a container (nil key: the run)
	modelCalls map[string]events.ToolCall
}

// buildRun builds the tree of one run from its events (ordered by ce-seq)
// and returns the sub-agent items by child run id.
func buildRun(evs []*events.Event) (*RunTree, map[string]*Item) {
	var runs Runs
	for _, e := range evs {
		runs.Add(e)
	}
	b := &runBuilder{t: &RunTree{Items: []*Item{}}, hooks: map[string][]*HookCall{}, ids: map[string]bool{},
		steps: map[int]*Item{}, tools: map[string]*Item{}, approvals: map[string]*Item{}, subagents: map[string]*Item{},
		compacting: map[*Item]*Item{}, modelCalls: map[string]events.ToolCall{}}
	if len(evs) > 0 {
		b.t.Run, _ = runs.Get(evs[0].RunID)
	}
	for _, e := range evs {
		if e.Stage != events.StageHookDecided && e.Stage != events.StageHookFailed {
			b.ids[e.ID] = true
		}
	}
	for _, e := range evs {
		h := hookCall(e)
		if h == nil {
			b.add(e)
			continue
		}
		if id := hookEventID(e); id != "" && b.ids[id] {
			b.hooks[id] = append(b.hooks[id], h)
			continue
		}
		// A decision on an event not recorded: an item of its own.
		b.place(e, &Item{Kind: KindHook, Text: "hook " + h.Plugin + " " + h.Decision + " on " + string(h.Stage), Hooks: []*HookCall{h}})
	}
	out := map[string]*Item{}
	for k, it := range b.subagents {
		if !strings.HasPrefix(k, "call/") {
			out[k] = it
		}
	}
	return b.t, out
}

// container is the step item of e's step, or nil (the run's top level).
func (b *runBuilder) container(e *events.Event) *Item {
	if e.Step <= 0 {
		return nil
	}
	st := b.steps[e.Step]
	if st == nil {
		st = &Item{Kind: KindStep, Stage: e.Stage, Seq: e.Seq, Step: e.Step, Time: e.Time, Text: fmt.Sprintf("step %d", e.Step)}
		b.steps[e.Step] = st
		b.t.Items = append(b.t.Items, st)
	}
	return st
}

// place fills it from e and appends it to parent (nil: e's container).
func (b *runBuilder) place(e *events.Event, it *Item, parent ...*Item) *Item {
	it.Stage, it.Seq, it.Step, it.Time = e.Stage, e.Seq, e.Step, e.Time
	var p *Item
	if len(parent) > 0 {
		p = parent[0]
	} else {
		p = b.container(e)
	}
	if p == nil {
		b.t.Items = append(b.t.Items, it)
	} else {
		p.Items = append(p.Items, it)
	}
	return it
}

// attach gives it the hooks decided on e, with their changes of e's payload
// from before (nil: not recorded).
func (b *runBuilder) attach(it *Item, e *events.Event, before []byte) {
	hs := b.hooks[e.ID]
	if len(hs) == 0 {
		return
	}
	changes(hs, before)
	it.Hooks = append(it.Hooks, hs...)
}

func (b *runBuilder) tool(e *events.Event, callID string) *Item {
	return b.tools[fmt.Sprintf("%d/%s", e.Step, callID)]
}

func (b *runBuilder) add(e *events.Event) {
	p, err := e.Payload()
	if err != nil {
		it := b.place(e, &Item{Kind: KindEvent, Text: string(e.Stage) + ": " + e.Summary()})
		b.attach(it, e, nil)
		return
	}
	switch p := p.(type) {
	case *events.Intake:
		b.attach(b.place(e, &Item{Kind: KindIntake, Text: "intake " + quote(p.Prompt)}, nil), e, nil)
	case *events.RunStarted:
		text := fmt.Sprintf("started: history %d messages, max %d steps", p.HistoryMessages, p.MaxSteps)
		if p.Resumed {
			text = "resumed (a later attempt)"
		}
		b.attach(b.place(e, &Item{Kind: KindStart, Text: text}, nil), e, nil)
	case *events.StepStarted:
		st := b.container(e)
		if st == nil {
			st = b.place(e, &Item{Kind: KindStep, Text: fmt.Sprintf("step %d", p.Step)})
		}
		b.attach(st, e, nil)
	case *events.StepCompleted:
		st := b.container(e)
		if st != nil {
			st.Text = fmt.Sprintf("step %d: %d tool calls, %s", p.Step, p.ToolCalls, tokens(p.Usage))
			b.attach(st, e, nil)
		}
	case *events.ContextAssembled:
		b.attach(b.place(e, &Item{Kind: KindContext, Text: fmt.Sprintf("context: %d messages, %d tools", len(p.Messages), len(p.Tools))}), e, nil)
	case *events.ModelResponded:
		for _, c := range p.Message.ToolCalls {
			b.modelCalls[c.ID] = c
		}
		text := "model"
		if p.Message.Content != "" || len(p.Message.ToolCalls) == 0 {
			text += " " + quote(p.Message.Content)
		}
		if len(p.Message.ToolCalls) > 0 {
			names := make([]string, len(p.Message.ToolCalls))
			for i, c := range p.Message.ToolCalls {
				names[i] = c.Name
			}
			text += " → calls " + strings.Join(names, ", ")
		}
		text += " (" + tokens(p.Usage) + ")"
		it := b.place(e, &Item{Kind: KindModel, Text: text, Model: &ModelItem{Content: p.Message.Content, ToolCalls: p.Message.ToolCalls, Usage: p.Usage, Model: p.Model}})
		b.attach(it, e, nil)
	case *events.ModelFailed:
		b.attach(b.place(e, &Item{Kind: KindModelFailed, Text: "model failed: " + p.Error}), e, nil)
	case *events.ToolBefore:
		it := b.tool(e, p.Call.ID)
		if it == nil {
			it = b.place(e, &Item{Kind: KindTool, Tool: &ToolItem{}})
			b.tools[fmt.Sprintf("%d/%s", e.Step, p.Call.ID)] = it
		}
		it.Tool.Call = p.Call
		var before []byte
		if c, ok := b.modelCalls[p.Call.ID]; ok {
			before = marshal(events.ToolBefore{Call: c})
		}
		b.attach(it, e, before)
		it.Text = toolText(it.Tool)
	case *events.ToolResultRecord:
		it := b.toolFor(e, p.Call)
		r := p.Result
		it.Tool.RawResult = &r
		b.attach(it, e, nil)
		it.Text = toolText(it.Tool)
	case *events.ToolAfter:
		it := b.toolFor(e, p.Call)
		var before []byte
		if it.Tool.RawResult != nil {
			before = marshal(events.ToolAfter{Call: it.Tool.Call, Result: *it.Tool.RawResult})
		}
		r := p.Result
		it.Tool.Call, it.Tool.Result, it.Tool.Context = p.Call, &r, p.Context
		b.attach(it, e, before)
		it.Text = toolText(it.Tool)
	case *events.ToolFailed:
		it := b.toolFor(e, p.Call)
		it.Tool.Error, it.Tool.Panicked, it.Tool.Unknown = p.Error, p.Panicked, p.Unknown
		b.attach(it, e, nil)
		it.Text = toolText(it.Tool)
	case *events.ApprovalRequested:
		parent := b.tool(e, p.Call.ID)
		if parent == nil {
			parent = b.container(e)
		}
		it := &Item{Kind: KindApproval, Approval: &ApprovalItem{Requested: *p}}
		it.Text = approvalText(it.Approval)
		if parent == nil {
			b.place(e, it)
		} else {
			b.place(e, it, parent)
		}
		b.approvals[p.Call.ID] = it
		b.attach(it, e, nil)
	case *events.ApprovalResolved:
		it := b.approvals[p.CallID]
		if it == nil {
			it = b.place(e, &Item{Kind: KindApproval, Approval: &ApprovalItem{Requested: events.ApprovalRequested{Call: events.ToolCall{ID: p.CallID}}}})
			b.approvals[p.CallID] = it
		}
		if it.Approval.Resolved != nil {
			it.Approval.Ignored++ // the first answer is the one acted on
		} else {
			r := *p
			it.Approval.Resolved = &r
			if err := r.Actor.CheckWriter(e.Writer); err != nil {
				it.Approval.IdentityProblem = err.Error()
			}
		}
		it.Text = approvalText(it.Approval)
		b.attach(it, e, nil)
	case *events.CompactBefore:
		text := fmt.Sprintf("compaction of %d messages", p.Messages)
		if p.Tokens > 0 {
			text += fmt.Sprintf(" (%d tokens, budget %d)", p.Tokens, p.Budget)
		}
		if p.Manual {
			text += " asked for"
		}
		it := b.place(e, &Item{Kind: KindCompaction, Text: text})
		b.compacting[b.container(e)] = it
		b.attach(it, e, nil)
	case *events.CompactAfter:
		it := b.compaction(e)
		it.Text += fmt.Sprintf(": %d → %d messages, summary %s (%s)", p.MessagesBefore, p.MessagesAfter, quote(p.Summary), tokens(p.Usage))
		b.attach(it, e, nil)
	case *events.CompactFailed:
		it := b.compaction(e)
		it.Text += ": failed: " + p.Error
		b.attach(it, e, nil)
	case *events.SubagentBefore:
		parent := b.tool(e, p.CallID)
		it := &Item{Kind: KindSubagent, Subagent: &SubagentItem{Before: *p}}
		if parent == nil {
			b.place(e, it)
		} else {
			b.place(e, it, parent)
		}
		if p.RunID != "" {
			b.subagents[p.RunID] = it
		}
		if p.CallID != "" {
			b.subagents["call/"+p.CallID] = it
		}
		it.Text = subagentText(it.Subagent)
		b.attach(it, e, nil)
	case *events.SubagentAfter:
		it := b.subagent(e, p.RunID, p.CallID, p.AgentID)
		r := *p
		it.Subagent.After = &r
		it.Text = subagentText(it.Subagent)
		b.attach(it, e, nil)
	case *events.SubagentFailed:
		it := b.subagent(e, p.RunID, p.CallID, p.AgentID)
		r := *p
		it.Subagent.Failed = &r
		it.Text = subagentText(it.Subagent)
		b.attach(it, e, nil)
	case *events.Stop:
		text := "stop: " + p.Reason
		if p.Continue != "" {
			text = fmt.Sprintf("stop: continued by %s: %s", p.Plugin, quote(p.Continue))
		}
		b.attach(b.place(e, &Item{Kind: KindStop, Text: text}, nil), e, nil)
	case *events.RunCompleted:
		text := "end: " + p.Reason
		if p.Detail != "" {
			text += " (" + p.Detail + ")"
		}
		if p.Answer != "" {
			text += " " + quote(p.Answer)
		}
		text += fmt.Sprintf(" [%d steps, %s]", p.Steps, tokens(p.Usage))
		b.attach(b.place(e, &Item{Kind: KindEnd, Text: text}, nil), e, nil)
	case *events.RunFailed:
		b.attach(b.place(e, &Item{Kind: KindEnd, Text: "end: failed: " + p.Error}, nil), e, nil)
	default:
		b.attach(b.place(e, &Item{Kind: KindEvent, Text: string(e.Stage) + ": " + e.Summary()}), e, nil)
	}
}

// toolFor is the tool item of call, made when its tool.before is not
// recorded.
func (b *runBuilder) toolFor(e *events.Event, call events.ToolCall) *Item {
	if it := b.tool(e, call.ID); it != nil {
		return it
	}
	it := b.place(e, &Item{Kind: KindTool, Tool: &ToolItem{Call: call}})
	b.tools[fmt.Sprintf("%d/%s", e.Step, call.ID)] = it
	return it
}

// compaction is the open compaction of e's container, or a new one.
func (b *runBuilder) compaction(e *events.Event) *Item {
	c := b.container(e)
	if it := b.compacting[c]; it != nil {
		delete(b.compacting, c)
		return it
	}
	return b.place(e, &Item{Kind: KindCompaction, Text: "compaction"})
}

// subagent is the sub-agent item of a child run or call, or a new one.
func (b *runBuilder) subagent(e *events.Event, runID, callID, agent string) *Item {
	if it := b.subagents[runID]; runID != "" && it != nil {
		return it
	}
	if it := b.subagents["call/"+callID]; callID != "" && it != nil {
		return it
	}
	it := b.place(e, &Item{Kind: KindSubagent, Subagent: &SubagentItem{Before: events.SubagentBefore{AgentID: agent, RunID: runID, CallID: callID}}})
	if runID != "" {
		b.subagents[runID] = it
	}
	return it
}

// hookEventID is the id of the event a hook.decided or hook.failed names.
func hookEventID(e *events.Event) string {
	var p struct {
		EventID string `json:"event_id"`
	}
	if e.DecodeData(&p) != nil {
		return ""
	}
	return p.EventID
}

// hookCall reads a hook.decided or hook.failed; nil for other events (and
// ones that do not decode).
func hookCall(e *events.Event) *HookCall {
	switch e.Stage {
	case events.StageHookDecided:
		var p events.HookDecided
		if e.DecodeData(&p) != nil {
			return nil
		}
		return &HookCall{Plugin: p.Plugin, Stage: p.Stage, Decision: p.Decision, Reason: p.Reason, LatencyUS: p.LatencyUS,
			Remote: p.Remote, Patch: p.Patch, Warnings: p.Warnings, Annotations: p.Annotations, Result: p.Result, Seq: e.Seq, Time: e.Time}
	case events.StageHookFailed:
		var p events.HookFailed
		if e.DecodeData(&p) != nil {
			return nil
		}
		return &HookCall{Plugin: p.Plugin, Stage: p.Stage, Decision: "failed", LatencyUS: p.LatencyUS, Seq: e.Seq, Time: e.Time,
			Failure: &HookFailure{Kind: p.Kind, Error: p.Error, Policy: p.Policy, Outcome: p.Outcome}}
	}
	return nil
}
