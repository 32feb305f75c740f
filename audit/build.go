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
	before     Before           // the payloads before their hooks
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
		compacting: map[*Item]*Item{}}
	if len(evs) > 0 {
		b.t.Run, _ = runs.Get(evs[0].RunID)
	}
	for _, e := range evs {
		if e.Stage.Group() != events.GroupHook {
			b.ids[e.ID] = true
		}
	}
	for _, e := range evs {
		b.before.Add(e)
		h, id := hookCall(e)
		if h == nil {
			b.add(e)
			continue
		}
		if id != "" && b.ids[id] {
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

// place fills it from e and appends it to e's container.
func (b *runBuilder) place(e *events.Event, it *Item) *Item {
	return b.placeIn(e, it, b.container(e))
}

// placeIn fills it from e and appends it to parent (nil: the run's top
// level).
func (b *runBuilder) placeIn(e *events.Event, it, parent *Item) *Item {
	it.Stage, it.Seq, it.Step, it.Time = e.Stage, e.Seq, e.Step, e.Time
	if parent == nil {
		b.t.Items = append(b.t.Items, it)
	} else {
		parent.Items = append(parent.Items, it)
	}
	return it
}

// add places e in the run's tree (a new item, or one placed before that e
// completes) and gives the item the hooks decided on e, with their changes
// of e's payload from before them (Before).
func (b *runBuilder) add(e *events.Event) {
	it := b.item(e)
	if it == nil {
		return
	}
	hs := b.hooks[e.ID]
	if len(hs) == 0 {
		return
	}
	changes(hs, b.before.Of(e))
	it.Hooks = append(it.Hooks, hs...)
}

// item is the item e belongs to, by its stage's group; nil when e adds
// nothing to the tree.
func (b *runBuilder) item(e *events.Event) *Item {
	p, err := e.Payload()
	if err != nil {
		return b.other(e)
	}
	switch e.Stage.Group() {
	case events.GroupRun:
		return b.runItem(e, p)
	case events.GroupStep:
		return b.stepItem(e, p)
	case events.GroupModel:
		return b.modelItem(e, p)
	case events.GroupTool:
		return b.toolItem(e, p)
	case events.GroupApproval:
		return b.approvalItem(e, p)
	case events.GroupCompaction:
		return b.compactionItem(e, p)
	case events.GroupSubagent:
		return b.subagentItem(e, p)
	}
	return b.other(e)
}

// other is an item of its own for an event the tree has no place for.
func (b *runBuilder) other(e *events.Event) *Item {
	return b.place(e, &Item{Kind: KindEvent, Text: string(e.Stage) + ": " + e.Summary()})
}

// runItem: intake, run.started, stop and the run's end, at the top level.
func (b *runBuilder) runItem(e *events.Event, p any) *Item {
	var it *Item
	switch p := p.(type) {
	case *events.Intake:
		it = &Item{Kind: KindIntake, Text: "intake " + quote(p.Prompt)}
	case *events.RunStarted:
		text := "started"
		if p.HistoryMessages > 0 || p.MaxSteps > 0 {
			text = fmt.Sprintf("started: history %d messages", p.HistoryMessages)
		}
		if p.MaxSteps > 0 { // a coding agent's run has no step limit of hookbus'
			text += fmt.Sprintf(", max %d steps", p.MaxSteps)
		}
		if p.Resumed {
			text = "resumed (a later attempt)"
		}
		it = &Item{Kind: KindStart, Text: text}
	case *events.Stop:
		text := "stop: " + p.Reason
		if p.Continue != "" {
			text = fmt.Sprintf("stop: continued by %s: %s", p.Plugin, quote(p.Continue))
		}
		it = &Item{Kind: KindStop, Text: text}
	case *events.RunCompleted:
		text := "end: " + p.Reason
		if p.Detail != "" {
			text += " (" + p.Detail + ")"
		}
		if p.Answer != "" {
			text += " " + quote(p.Answer)
		}
		if p.Steps > 0 || p.Usage != (events.Usage{}) { // a coding agent's run counts neither
			text += fmt.Sprintf(" [%d steps, %s]", p.Steps, tokens(p.Usage))
		}
		it = &Item{Kind: KindEnd, Text: text}
	case *events.RunFailed:
		it = &Item{Kind: KindEnd, Text: "end: failed: " + p.Error}
	default:
		return b.other(e)
	}
	return b.placeIn(e, it, nil)
}

// stepItem: a step's start and end are one item, holding the step's.
func (b *runBuilder) stepItem(e *events.Event, p any) *Item {
	switch p := p.(type) {
	case *events.StepStarted:
		if st := b.container(e); st != nil {
			return st
		}
		return b.place(e, &Item{Kind: KindStep, Text: fmt.Sprintf("step %d", p.Step)})
	case *events.StepCompleted:
		st := b.container(e)
		if st != nil {
			st.Text = fmt.Sprintf("step %d: %d tool calls, %s", p.Step, p.ToolCalls, tokens(p.Usage))
		}
		return st
	}
	return b.other(e)
}

// modelItem: the context given to the model, its reply, a failed call.
func (b *runBuilder) modelItem(e *events.Event, p any) *Item {
	switch p := p.(type) {
	case *events.ContextAssembled:
		return b.place(e, &Item{Kind: KindContext, Text: fmt.Sprintf("context: %d messages, %d tools", len(p.Messages), len(p.Tools))})
	case *events.ModelResponded:
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
		return b.place(e, &Item{Kind: KindModel, Text: text, Model: &ModelItem{Content: p.Message.Content, ToolCalls: p.Message.ToolCalls, Usage: p.Usage, Model: p.Model}})
	case *events.ModelFailed:
		return b.place(e, &Item{Kind: KindModelFailed, Text: "model failed: " + p.Error})
	}
	return b.other(e)
}

// toolItem: a tool call's events are one item: the call as it ran, its raw
// result, the result the model was given or its failure.
func (b *runBuilder) toolItem(e *events.Event, p any) *Item {
	var it *Item
	switch p := p.(type) {
	case *events.ToolBefore:
		it = b.toolFor(e, p.Call)
		it.Tool.Call = p.Call
	case *events.ToolResultRecord:
		it = b.toolFor(e, p.Call)
		r := p.Result
		it.Tool.RawResult = &r
	case *events.ToolAfter:
		it = b.toolFor(e, p.Call)
		r := p.Result
		it.Tool.Call, it.Tool.Result, it.Tool.Context = p.Call, &r, p.Context
	case *events.ToolFailed:
		it = b.toolFor(e, p.Call)
		it.Tool.Error, it.Tool.Panicked, it.Tool.Unknown = p.Error, p.Panicked, p.Unknown
	default:
		return b.other(e)
	}
	it.Text = toolText(it.Tool)
	return it
}

// approvalItem: a call's request for a human and the answer are one item,
// under the call.
func (b *runBuilder) approvalItem(e *events.Event, p any) *Item {
	switch p := p.(type) {
	case *events.ApprovalRequested:
		it := &Item{Kind: KindApproval, Approval: &ApprovalItem{Requested: *p}}
		it.Text = approvalText(it.Approval)
		b.placeIn(e, it, b.toolOrContainer(e, p.Call.ID))
		b.approvals[p.Call.ID] = it
		return it
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
		return it
	}
	return b.other(e)
}

// compactionItem: a compaction's start and its end or failure are one
// item.
func (b *runBuilder) compactionItem(e *events.Event, p any) *Item {
	switch p := p.(type) {
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
		return it
	case *events.CompactAfter:
		it := b.compaction(e)
		it.Text += fmt.Sprintf(": %d → %d messages, summary %s (%s)", p.MessagesBefore, p.MessagesAfter, quote(p.Summary), tokens(p.Usage))
		return it
	case *events.CompactFailed:
		it := b.compaction(e)
		it.Text += ": failed: " + p.Error
		return it
	}
	return b.other(e)
}

// subagentItem: a call of another agent and how it ended are one item,
// under the Task call; the child run is nested in it later (buildFamily).
func (b *runBuilder) subagentItem(e *events.Event, p any) *Item {
	var it *Item
	switch p := p.(type) {
	case *events.SubagentBefore:
		it = b.placeIn(e, &Item{Kind: KindSubagent, Subagent: &SubagentItem{Before: *p}}, b.toolOrContainer(e, p.CallID))
		if p.RunID != "" {
			b.subagents[p.RunID] = it
		}
		if p.CallID != "" {
			b.subagents["call/"+p.CallID] = it
		}
	case *events.SubagentAfter:
		it = b.subagent(e, p.RunID, p.CallID, p.AgentID)
		r := *p
		it.Subagent.After = &r
	case *events.SubagentFailed:
		it = b.subagent(e, p.RunID, p.CallID, p.AgentID)
		r := *p
		it.Subagent.Failed = &r
	default:
		return b.other(e)
	}
	it.Text = subagentText(it.Subagent)
	return it
}

// toolOrContainer is the tool item of e's call callID, or e's container
// when the call has none.
func (b *runBuilder) toolOrContainer(e *events.Event, callID string) *Item {
	if it := b.tools[fmt.Sprintf("%d/%s", e.Step, callID)]; it != nil {
		return it
	}
	return b.container(e)
}

// toolFor is the tool item of call, made when it is the first event of
// the call read.
func (b *runBuilder) toolFor(e *events.Event, call events.ToolCall) *Item {
	k := fmt.Sprintf("%d/%s", e.Step, call.ID)
	if it := b.tools[k]; it != nil {
		return it
	}
	it := b.place(e, &Item{Kind: KindTool, Tool: &ToolItem{Call: call}})
	b.tools[k] = it
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

// hookCall reads a hook.decided or hook.failed, and the id of the event it
// was decided on; nil for other events (and ones that do not decode).
func hookCall(e *events.Event) (*HookCall, string) {
	switch e.Stage {
	case events.StageHookDecided:
		p, err := events.Data[events.HookDecided](e)
		if err != nil {
			return nil, ""
		}
		return &HookCall{Plugin: p.Plugin, Stage: p.Stage, Decision: p.Decision, Reason: p.Reason, LatencyUS: p.LatencyUS,
			Remote: p.Remote, Shadow: p.Shadow, Policy: p.Policy, Patch: p.Patch, Warnings: p.Warnings, Annotations: p.Annotations, Result: p.Result, Seq: e.Seq, Time: e.Time}, p.EventID
	case events.StageHookFailed:
		p, err := events.Data[events.HookFailed](e)
		if err != nil {
			return nil, ""
		}
		return &HookCall{Plugin: p.Plugin, Stage: p.Stage, Decision: "failed", LatencyUS: p.LatencyUS, Seq: e.Seq, Time: e.Time, Shadow: p.Outcome == OutcomeShadow,
			Failure: &HookFailure{Kind: p.Kind, Error: p.Error, Policy: p.Policy, Outcome: p.Outcome}}, p.EventID
	}
	return nil, ""
}
