package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/loop"
)

// What the randomized fault schedule checks once it has drained: the whole
// stream as observer replay --json gives it, observer verify --json's
// verdicts, the Bash commands' own count of their executions (calls.log),
// the guard's record of the requests it saw (guard.log), and what the load
// submitted and answered. Every failure names its run and what broke; all
// are collected before the test fails.

// schedInput is what the audit reads.
type schedInput struct {
	evs      []*events.Event
	verdicts []*audit.RunVerdict
	verifyOK bool // observer verify exited 0
	root     string
	guardLog string
	defs     map[string]map[string]string // worker, as its executions name it → agent → the digest it serves
	serves   map[string][]string          // worker process → the agents it serves
	load     *load
	workers  map[string]*procSlot
	plugin   string // the guard's plugin name
	approver string // who the approver's answers are recorded as given by
}

// schedFigures are what the audit counted.
type schedFigures struct {
	Runs, Events, Attempts, Resumed, Superseded, OutOfOrder int
	Outcomes                                                map[string]int
	NotSubmitted                                            int // runs in the stream no acknowledged submission named
	Calls, Denied, Unknown, BashCalls, BashResults          int
	Executions, Unrecorded                                  int
	GuardRequests, GuardAllowed                             int
	ApprovalsAsked, ApprovalsAnswered, ApprovalsExpired     int
	ConflictsChecked                                        int
	Contexts, Sessions, Compactions                         int
	Verified                                                int
	HandOffs, Takeovers, Retried                            int
	TwoUnderOneSeq                                          int            // runs with two events under one seq in their effective record
	LostRuns, LostSeqs                                      int            // taken-over runs whose end closes over appends lost in a fault, and those seqs
	TakenByUnacked                                          int            // taken over by a run whose loop submit process failed (yet queued it)
	Definitions                                             map[string]int // runs by the definition they started on: "agent digest"
}

// schedAudit collects the failures.
type schedAudit struct {
	in       *schedInput
	failures []string
	fig      schedFigures
	agentOf  map[string]string // run → agent
	effs     map[string][]*events.Event
	guardSet map[string]bool // "<run> <call>" the guard recorded a request for
	// takeovers are the sessions where a run was taken over by another:
	// its turn may have no reply (conversationError's unanswered).
	takeovers map[string]bool
	runDigest map[string]string // run → the definition its first run.started records
	sessionOf map[string]string // run → "agent/session", as the stream has it
}

// digestOf reports whether a worker serves agent on definition digest.
func (a *schedAudit) digestOf(agent, digest string) bool {
	for _, defs := range a.in.defs {
		if defs[agent] == digest {
			return true
		}
	}
	return false
}

func (a *schedAudit) fail(format string, args ...any) {
	a.failures = append(a.failures, fmt.Sprintf(format, args...))
}

// auditSchedule runs every check and returns the failures and figures.
func auditSchedule(in *schedInput) ([]string, schedFigures) {
	a := &schedAudit{in: in, agentOf: map[string]string{}, effs: map[string][]*events.Event{}, runDigest: map[string]string{}, sessionOf: map[string]string{}}
	for _, e := range in.evs {
		a.sessionOf[e.RunID] = e.AgentID + "/" + e.SessionID
	}
	a.fig.Outcomes, a.fig.Definitions = map[string]int{}, map[string]int{}
	a.fig.Events = len(in.evs)
	a.uniqueIDs()
	a.takeovers = map[string]bool{}
	for _, e := range in.evs {
		var p events.RunFailed
		if e.Stage == events.StageRunFailed && e.DecodeData(&p) == nil && takenOver.MatchString(p.Error) {
			a.takeovers[e.AgentID+"/"+e.SessionID] = true
		}
	}
	groups := byRun(in.evs)
	for _, id := range slices.Sorted(maps.Keys(groups)) {
		a.run(id, groups[id])
	}
	a.lost(groups)
	a.executions()
	a.verify(groups)
	a.sessions()
	a.workerLogs()
	for _, n := range in.load.notes {
		a.fail("approvals: %s", n)
	}
	return a.failures, a.fig
}

func (a *schedAudit) uniqueIDs() {
	seen := make(map[string]int, len(a.in.evs))
	for i, e := range a.in.evs {
		if j, dup := seen[e.ID]; dup {
			a.fail("event id %s stored twice: stream positions %d (%s of run %s) and %d (%s of run %s)", e.ID, j, a.in.evs[j].Stage, a.in.evs[j].RunID, i, e.Stage, e.RunID)
		}
		seen[e.ID] = i
	}
}

// callRecord is what a run's effective record holds of one tool call.
type callRecord struct {
	before    *events.Event
	befores   int
	afters    []events.ToolAfter
	results   int // tool.result
	unknown   bool
	asked     bool
	answers   []events.ApprovalResolved // in the whole stream, by stream order
	beforeCmd string                    // a Bash call's command as recorded
}

// run checks one run's events (in stream order).
func (a *schedAudit) run(id string, raw []*events.Event) {
	in := a.in
	agent, session := raw[0].AgentID, raw[0].SessionID
	a.agentOf[id] = agent
	bad := func(format string, args ...any) {
		a.fail("run %s (%s/%s): %s", id, agent, session, fmt.Sprintf(format, args...))
	}
	if agent != agentA && agent != agentB {
		bad("a run of an agent the schedule does not run")
		return
	}
	a.fig.Runs++
	sub := in.load.runs[id]
	if sub == nil {
		a.fig.NotSubmitted++
	} else if sub.agent != agent || sub.session != session {
		bad("submitted for %s/%s", sub.agent, sub.session)
	}
	terminals, ordered := 0, true
	for i, e := range raw {
		if e.AgentID != agent || e.SessionID != session {
			bad("event %s (%s) is of %s/%s", e.ID, e.Stage, e.AgentID, e.SessionID)
		}
		if e.Stage == events.StageRunCompleted || e.Stage == events.StageRunFailed {
			terminals++
		}
		if i > 0 && e.Seq < raw[i-1].Seq {
			ordered = false
		}
	}
	if !ordered {
		a.fig.OutOfOrder++
	}
	if terminals != 1 {
		bad("%d terminal events in the stream, want 1\n  %s", terminals, seqStages(raw))
	}
	eff, dropped := effectiveRun(raw)
	a.effs[id] = eff
	a.fig.Superseded += dropped
	// No two events under one seq: an attempt that numbered from a record
	// missing the latest events stores a second event at a seq taken.
	under := map[uint64][]*events.Event{}
	for _, e := range eff {
		under[e.Seq] = append(under[e.Seq], e)
	}
	for _, seq := range slices.Sorted(maps.Keys(under)) {
		if es := under[seq]; len(es) > 1 {
			a.fig.TwoUnderOneSeq++
			bad("%d events under seq %d (%s)\n  %s", len(es), seq, stagesLine(es), seqStages(raw))
			break
		}
	}
	// Seqs 1..N, but for those a taken-over run's end records as never
	// stored (appends lost in a fault that no attempt of the run can
	// fill any more: docs/PROTOCOL.md): each of those is absent.
	lost := lostOf(eff)
	want := uint64(1)
	for _, e := range eff {
		for lost[want] && e.Seq > want {
			want++
		}
		if lost[e.Seq] {
			bad("seq %d, which its end records as never stored, is stored (%s)\n  %s", e.Seq, e.Stage, seqStages(eff))
			break
		}
		if e.Seq != want {
			bad("effective seqs are not 1..%d (seq %d where %d was due)\n  %s", len(eff)+len(lost), e.Seq, want, seqStages(eff))
			break
		}
		want++
	}
	if len(lost) > 0 {
		a.fig.LostRuns++
		a.fig.LostSeqs += len(lost)
	}
	var end *events.Event
	if n := len(eff); n > 0 && (eff[n-1].Stage == events.StageRunCompleted || eff[n-1].Stage == events.StageRunFailed) {
		end = eff[n-1]
	} else {
		bad("the effective record does not end with its terminal event\n  %s", seqStages(eff))
	}

	calls := map[string]*callRecord{}
	call := func(cid string) *callRecord {
		if calls[cid] == nil {
			calls[cid] = &callRecord{}
		}
		return calls[cid]
	}
	hooksOn := map[string][]string{} // stored event id → the guard's records on it
	for _, e := range eff {
		switch e.Stage {
		case events.StageRunStarted:
			a.fig.Attempts++
			var p events.RunStarted
			if e.DecodeData(&p) != nil {
				bad("run.started %s does not decode", e.ID)
				continue
			}
			if p.Resumed {
				a.fig.Resumed++
			}
			switch {
			case p.Definition == nil:
				bad("run.started (seq %d) records no definition", e.Seq)
			case !a.digestOf(agent, p.Definition.Digest) || p.Definition.Name != agent:
				bad("run.started (seq %d) ran on definition %s of %q, which no agent file of %s has", e.Seq, p.Definition.Digest, p.Definition.Name, agent)
			case a.runDigest[id] != "" && p.Definition.Digest != a.runDigest[id]:
				bad("run.started (seq %d) ran on definition %s; the run started on %s", e.Seq, p.Definition.Digest, a.runDigest[id])
			case a.runDigest[id] == "":
				a.runDigest[id] = p.Definition.Digest
				a.fig.Definitions[agent+" "+p.Definition.String()]++
			case p.PreviousDefinition != nil:
				bad("run.started (seq %d) adopted the run from definition %s", e.Seq, p.PreviousDefinition.Digest)
			}
		case events.StageHookDecided:
			var p events.HookDecided
			if e.DecodeData(&p) == nil && p.Plugin == in.plugin {
				hooksOn[p.EventID] = append(hooksOn[p.EventID], "decided:"+p.Decision)
			}
		case events.StageHookFailed:
			var p events.HookFailed
			if e.DecodeData(&p) == nil && p.Plugin == in.plugin {
				hooksOn[p.EventID] = append(hooksOn[p.EventID], "failed:"+p.Outcome)
			}
		case events.StageToolBefore:
			var p events.ToolBefore
			if e.DecodeData(&p) != nil {
				bad("tool.before %s does not decode", e.ID)
				continue
			}
			c := call(p.Call.ID)
			c.befores++
			c.before = e
			if p.Call.Name == "Bash" {
				var args struct {
					Command string `json:"command"`
				}
				_ = json.Unmarshal(p.Call.Arguments, &args)
				c.beforeCmd = args.Command
			}
		case events.StageToolAfter:
			var p events.ToolAfter
			if e.DecodeData(&p) == nil {
				call(p.Call.ID).afters = append(call(p.Call.ID).afters, p)
			}
		case events.StageToolResult:
			var p events.ToolResultRecord
			if e.DecodeData(&p) == nil {
				call(p.Call.ID).results++
			}
		case events.StageToolFailed:
			var p events.ToolFailed
			if e.DecodeData(&p) == nil && p.Unknown {
				call(p.Call.ID).unknown = true
				a.fig.Unknown++
			}
		case events.StageApprovalRequested:
			var p events.ApprovalRequested
			if e.DecodeData(&p) == nil {
				call(p.Call.ID).asked = true
				a.fig.ApprovalsAsked++
			}
		case events.StageCompactAfter:
			a.fig.Compactions++
		case events.StageContextAssembled:
			a.fig.Contexts++
			var p events.ContextAssembled
			if e.DecodeData(&p) == nil {
				if err := conversationError(p.Messages, a.takeovers[agent+"/"+session]); err != nil {
					bad("step %d: the model was given %v", e.Step, err)
				}
			}
		}
	}
	// Answers: every approval.resolved of the run in the stream (a later
	// attempt supersedes none: an answer is stored fenced on the record).
	for _, e := range raw {
		if e.Stage != events.StageApprovalResolved {
			continue
		}
		var p events.ApprovalResolved
		if e.DecodeData(&p) == nil {
			call(p.CallID).answers = append(call(p.CallID).answers, p)
		}
	}

	var rc events.RunCompleted
	reason := ""
	switch {
	case end == nil:
	case end.Stage == events.StageRunFailed:
		reason = "failed"
	case end.DecodeData(&rc) != nil:
		bad("run.completed %s does not decode", end.ID)
	default:
		reason = rc.Reason
	}
	a.fig.Outcomes[reason]++
	a.outcome(id, sub, end, rc, bad)

	guarded := a.guarded()
	for _, cid := range slices.Sorted(maps.Keys(calls)) {
		c := calls[cid]
		a.fig.Calls++
		if c.befores != 1 {
			bad("call %s has %d tool.before, want 1\n  %s", cid, c.befores, seqStages(eff))
			continue
		}
		// A call is settled without a tool.after (docs/PROTOCOL.md, "Order
		// of a run's events") when the run ended rejected while it was
		// asked about, or ended (taken over) while it still waited, after
		// it was refused, or after the guard denied it: it never ran.
		h := hooksOn[c.before.ID]
		refused := len(c.answers) == 0 || !c.answers[0].Approved
		denied := len(h) == 1 && h[0] == "failed:"+interceptors.FailedClosed
		settled := c.asked && (reason == events.ReasonRejected || reason == "failed" && refused) || denied && reason == "failed"
		switch {
		case len(c.afters) > 1:
			bad("call %s has %d tool.after, want 1", cid, len(c.afters))
		case len(c.afters) == 0 && !settled:
			bad("call %s has no tool.after (and no rejection, wait or deny that settled it)\n  %s", cid, seqStages(eff))
		}
		if c.unknown && (len(c.afters) != 1 || !c.afters[0].Result.IsError || !strings.Contains(c.afters[0].Result.Content, "outcome unknown")) {
			bad("call %s: outcome unknown, but its tool.after does not say so", cid)
		}
		// The fail-closed guard decided on every call, or failed closed.
		name := c.before.Subject
		switch {
		case len(h) != 1:
			bad("call %s (%s): the guard's records on its tool.before %s: %v, want one", cid, name, c.before.ID, h)
		case h[0] == "failed:"+interceptors.FailedClosed:
			a.fig.Denied++
			if c.results > 0 || c.asked || len(c.afters) == 1 && !strings.HasPrefix(c.afters[0].Result.Content, "denied: "+in.plugin+": ") {
				bad("call %s (%s): the guard failed closed, yet the call went on (%d tool.result, asked %v, after %+v)", cid, name, c.results, c.asked, c.afters)
			}
		case h[0] == "decided:allow" || h[0] == "decided:modify":
			a.fig.GuardAllowed++
			if !guarded[id+" "+cid] {
				bad("call %s (%s): the guard allowed it, but its record of the requests it saw does not hold it", cid, name)
			}
			if name == "Bash" && !strings.Contains(c.beforeCmd, "checked "+id+" "+cid+" ") {
				bad("call %s: the recorded Bash command is not the guard's: %q", cid, c.beforeCmd)
			}
		default:
			bad("call %s (%s): the guard's record on it is %s", cid, name, h[0])
		}
		if name == "Bash" {
			a.fig.BashCalls++
		}
		a.answers(id, cid, sub, c, reason, bad)
	}
}

// outcome checks how a run ended: done; rejected, when its plan rejected
// a call; failed only when another run of its session, submitted at the
// same moment, took the session over.
func (a *schedAudit) outcome(id string, sub *submitted, end *events.Event, rc events.RunCompleted, bad func(string, ...any)) {
	if end == nil {
		return
	}
	if end.Stage == events.StageRunFailed {
		var p events.RunFailed
		_ = end.DecodeData(&p)
		m := takenOver.FindStringSubmatch(p.Error)
		switch {
		case m == nil:
			bad("run.failed: %s", p.Error)
		case a.sessionOf[m[1]] != end.AgentID+"/"+end.SessionID:
			bad("run.failed %q names a run that is not of its session", p.Error)
		case a.in.load.runs[m[1]] == nil:
			// A run of a loop submit process that failed, yet queued it,
			// while its lane submitted the run again: two runs at once.
			a.fig.Takeovers++
			a.fig.TakenByUnacked++
		case sub != nil && !sub.pair && !a.in.load.runs[m[1]].pair:
			bad("run.failed %q, but it was alone in its session when it ran", p.Error)
		default:
			a.fig.Takeovers++
		}
		return
	}
	switch rc.Reason {
	case events.ReasonDone:
	case events.ReasonRejected:
		if sub != nil && sub.plan != planReject {
			bad("ended rejected (%s), but its plan was %s", rc.Detail, sub.plan)
		}
	default:
		bad("ended %s (%s)", rc.Reason, rc.Detail)
	}
}

var takenOver = regexp.MustCompile(`taken over by run ([0-9A-Z]{26})`)

// lostOf is the set of seqs a run's end (the last event of its effective
// record, a run.failed) records as never stored.
func lostOf(eff []*events.Event) map[uint64]bool {
	if len(eff) == 0 || eff[len(eff)-1].Stage != events.StageRunFailed {
		return nil
	}
	var p events.RunFailed
	if eff[len(eff)-1].DecodeData(&p) != nil || len(p.Lost) == 0 {
		return nil
	}
	out := map[uint64]bool{}
	for _, s := range p.Lost {
		out[s] = true
	}
	return out
}

// answers checks a call's answers: one at most; one when it was asked
// about and its run went past it; the approver's (never its conflicting
// second answer) or an expiry; and the answer a conflicting one was
// refused with is the one recorded.
func (a *schedAudit) answers(id, cid string, sub *submitted, c *callRecord, reason string, bad func(string, ...any)) {
	if !c.asked {
		if len(c.answers) > 0 {
			bad("call %s has %d answers but was never asked about", cid, len(c.answers))
		}
		return
	}
	switch {
	case len(c.answers) > 1:
		var d []string
		for _, r := range c.answers {
			d = append(d, r.Describe())
		}
		bad("call %s has %d approval.resolved, want 1: %s", cid, len(c.answers), strings.Join(d, "; "))
		return
	case len(c.answers) == 0:
		if reason != "failed" && reason != events.ReasonRejected {
			bad("call %s was asked about, the run ended %s, and the call has no answer", cid, reason)
		}
		return
	}
	r := c.answers[0]
	switch {
	case r.Channel == events.ChannelExpiry:
		a.fig.ApprovalsExpired++
		if !r.Expired || r.Action != events.ActionRejectAndContinue {
			bad("call %s: an expiry %s, want reject_and_continue (on_expiry: deny)", cid, r.Describe())
		}
	case r.DeclaredBy == "second":
		bad("call %s: the conflicting second answer was recorded: %s", cid, r.Describe())
	case r.DeclaredBy != "first" || r.Channel != events.ChannelCLI || r.Identity != a.in.approver:
		bad("call %s: answered by %s, not by the approver (%s)", cid, r.Describe(), a.in.approver)
	default:
		a.fig.ApprovalsAnswered++
		if sub != nil && sub.plan == planExpire {
			bad("call %s: answered (%s) although its plan was to let it expire", cid, r.Describe())
		}
	}
	ans := a.in.load.answers[id]
	if ans == nil {
		return
	}
	// An answer the approver was told is recorded is the call's answer.
	if act, ok := ans.acked[cid]; ok && (r.DeclaredBy != "first" || r.Channel != events.ChannelCLI || r.Action != act) {
		bad("call %s: the approver's answer (%s) was acknowledged as recorded, the record holds %s", cid, act, r.Describe())
	}
	if ans.first == cid && r.Channel != events.ChannelExpiry && r.Action != ans.firstAct {
		bad("call %s: the approver answered %s first, the record holds %s", cid, ans.firstAct, r.Describe())
	}
	if ans.first == cid && ans.conflict {
		a.fig.ConflictsChecked++
		if ans.named != r.AnswerID {
			bad("call %s: the conflicting answer was refused naming answer %s, the record holds %s", cid, ans.named, r.Describe())
		}
	}
}

// guarded is the set of "<run> <call>" the guard recorded a request for.
func (a *schedAudit) guarded() map[string]bool {
	if a.guardSet != nil {
		return a.guardSet
	}
	a.guardSet = map[string]bool{}
	f, err := os.Open(a.in.guardLog)
	if err != nil {
		a.fail("the guard's record: %v", err)
		return a.guardSet
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			a.fail("guard.log: line %q is not a request record", sc.Text())
			continue
		}
		a.fig.GuardRequests++
		a.guardSet[fs[0]+" "+fs[1]] = true
	}
	return a.guardSet
}

// execution is one line of calls.log.
type execution struct {
	text, tag, run, call, worker string
}

// executions holds the Bash executions counted in calls.log to the
// record: each ran with the guard's decision (its tag rewritten), on a
// worker serving its run's agent, at most once per call, and is the
// recorded result of its call, or its call's outcome is recorded unknown.
// Every recorded Bash result is one execution.
func (a *schedAudit) executions() {
	b, err := os.ReadFile(filepath.Join(a.in.root, callsLog))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		a.fail("%s: %v", callsLog, err)
		return
	}
	byCall := map[string][]execution{}
	lines := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 5 {
			a.fail("%s: line %q is not an execution mark", callsLog, line)
			continue
		}
		x := execution{text: line, tag: fs[1], run: fs[2], call: fs[3], worker: fs[4]}
		a.fig.Executions++
		lines[line] = true
		if x.tag != "checked" {
			a.fail("a Bash command ran without the guard's decision (its tag is %q): %s", x.tag, line)
			continue
		}
		agent := a.agentOf[x.run]
		if agent == "" {
			a.fail("%s: execution %q of a run with no events", callsLog, line)
			continue
		}
		if d, ok := a.in.defs[x.worker][agent]; !ok {
			a.fail("run %s (%s): call %s ran on %s, which does not serve %s", x.run, agent, x.call, x.worker, agent)
		} else if d != a.runDigest[x.run] {
			a.fail("run %s (%s): call %s ran on %s, which serves definition %s; the run is on %s", x.run, agent, x.call, x.worker, d, a.runDigest[x.run])
		}
		byCall[x.run+" "+x.call] = append(byCall[x.run+" "+x.call], x)
	}
	for _, k := range slices.Sorted(maps.Keys(byCall)) {
		xs := byCall[k]
		run, cid, _ := strings.Cut(k, " ")
		if len(xs) > 1 {
			var d []string
			for _, x := range xs {
				d = append(d, x.text)
			}
			a.fail("run %s: call %s ran %d times: %s", run, cid, len(xs), strings.Join(d, " | "))
		}
		after, unknown := a.bashOutcome(run, cid)
		for _, x := range xs {
			switch {
			case after != nil && !after.Result.IsError && after.Result.Content == x.text:
			case unknown:
				a.fig.Unrecorded++
			default:
				got := "no tool.after"
				if after != nil {
					got = fmt.Sprintf("tool.after %q", after.Result.Content)
				}
				a.fail("run %s: call %s ran (%s) but its record holds %s, and no outcome unknown\n  %s", run, cid, x.text, got, seqStages(a.effs[run]))
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(a.effs)) {
		for _, e := range a.effs[id] {
			if e.Stage != events.StageToolAfter {
				continue
			}
			var p events.ToolAfter
			if e.DecodeData(&p) != nil || p.Call.Name != "Bash" || p.Result.IsError {
				continue
			}
			a.fig.BashResults++
			if !lines[p.Result.Content] || !strings.Contains(p.Result.Content, " "+id+" "+p.Call.ID+" ") {
				a.fail("run %s: call %s's recorded result %q is not an execution of that call in %s", id, p.Call.ID, p.Result.Content, callsLog)
			}
		}
	}
}

// bashOutcome is a call's tool.after in its run's effective record, and
// whether its outcome is recorded unknown.
func (a *schedAudit) bashOutcome(run, cid string) (*events.ToolAfter, bool) {
	var after *events.ToolAfter
	unknown := false
	for _, e := range a.effs[run] {
		switch e.Stage {
		case events.StageToolAfter:
			var p events.ToolAfter
			if e.DecodeData(&p) == nil && p.Call.ID == cid {
				after = &p
			}
		case events.StageToolFailed:
			var p events.ToolFailed
			if e.DecodeData(&p) == nil && p.Call.ID == cid && p.Unknown {
				unknown = true
			}
		}
	}
	return after, unknown
}

// lost checks that every acknowledged submission is a run with an end, and
// that the runs no acknowledged submission names are at most the loop
// submit processes that failed (their request may have been stored).
func (a *schedAudit) lost(groups map[string][]*events.Event) {
	for _, id := range a.in.load.order {
		sub := a.in.load.runs[id]
		raw := groups[id]
		if len(raw) == 0 {
			a.fail("run %s (%s/%s, submitted by %s) was lost: no event of it is stored", id, sub.agent, sub.session, sub.via)
			continue
		}
		if len(ends(raw, id)) == 0 {
			a.fail("run %s (%s/%s, submitted by %s) never ended\n  %s", id, sub.agent, sub.session, sub.via, seqStages(raw))
		}
	}
	if a.fig.NotSubmitted > a.in.load.unackd {
		a.fail("%d runs in the stream that no acknowledged submission names, and only %d loop submit processes failed", a.fig.NotSubmitted, a.in.load.unackd)
	}
}

// verify checks observer verify's verdicts: it passed, every run it
// verified is intact, and it verified every run.
func (a *schedAudit) verify(groups map[string][]*events.Event) {
	if !a.in.verifyOK {
		a.fail("observer verify failed (exit not 0)")
	}
	seen := map[string]bool{}
	for _, vd := range a.in.verdicts {
		seen[vd.RunID] = true
		a.fig.Verified++
		if !vd.Intact || !vd.OK() || !vd.Ended {
			var ps []string
			for _, p := range vd.Problems {
				ps = append(ps, fmt.Sprintf("%s at seq %d: %s (fails %v)", p.Kind, p.Seq, p.Detail, p.Fails))
			}
			a.fail("run %s: observer verify: intact %v, ended %v: %s\n  %s", vd.RunID, vd.Intact, vd.Ended, strings.Join(ps, "; "), seqStages(groups[vd.RunID]))
		}
	}
	for id := range groups {
		if !seen[id] {
			a.fail("run %s: observer verify gave it no verdict", id)
		}
	}
}

// sessions rebuilds every session as the loop does and checks it is a
// conversation a provider accepts.
func (a *schedAudit) sessions() {
	type key struct{ agent, session string }
	bySession := map[key][]*events.Event{}
	for _, e := range a.in.evs {
		k := key{e.AgentID, e.SessionID}
		bySession[k] = append(bySession[k], e)
	}
	for k, sevs := range bySession {
		a.fig.Sessions++
		s, err := loop.RebuildSession(sevs)
		if err != nil {
			a.fail("session %s/%s: rebuild: %v", k.agent, k.session, err)
			continue
		}
		if len(s.Skipped) > 0 {
			a.fail("session %s/%s: rebuild skipped %v", k.agent, k.session, errors.Join(s.Skipped...))
		}
		if err := conversationError(s.Messages, a.takeovers[k.agent+"/"+k.session]); err != nil {
			a.fail("session %s/%s rebuilt: %v\n  its record: %s", k.agent, k.session, err, sessionRecord(sevs))
		}
	}
}

// sessionRecord lists a session's events in stream order as
// stored:run(last 4):seq:stage, with a reply's calls and a compaction's
// read-from, for a failure to show what the conversation was folded from.
func sessionRecord(evs []*events.Event) string {
	out := make([]string, len(evs))
	for i, e := range evs {
		s := fmt.Sprintf("%d:%s:%d:%s", e.Stored, e.RunID[max(0, len(e.RunID)-4):], e.Seq, e.Stage)
		switch e.Stage {
		case events.StageModelResponded:
			var p events.ModelResponded
			if e.DecodeData(&p) == nil {
				s += fmt.Sprintf("(%d calls)", len(p.Message.ToolCalls))
			}
		case events.StageCompactAfter:
			var p events.CompactAfter
			if e.DecodeData(&p) == nil {
				s += fmt.Sprintf("(%d messages, from %d)", len(p.Messages), p.ReadFrom)
			}
		}
		out[i] = s
	}
	return strings.Join(out, " ")
}

var runInLog = regexp.MustCompile(`\brun=([0-9A-Z]{26})\b`)

// workerLogs checks that no worker mentions a run of an agent it does not
// serve, or dropped a request; it counts hand-offs and runs given back.
func (a *schedAudit) workerLogs() {
	for _, name := range slices.Sorted(maps.Keys(a.in.workers)) {
		logs := a.in.workers[name].logs()
		a.fig.HandOffs += strings.Count(logs, "handed to the workers of definition")
		a.fig.Retried += strings.Count(logs, "run not ended; handed back to the queue")
		reported := map[string]bool{}
		sc := bufio.NewScanner(strings.NewReader(logs))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "dropping") {
				a.fail("%s dropped a run request: %s", name, line)
			}
			for _, m := range runInLog.FindAllStringSubmatch(line, -1) {
				agent := a.agentOf[m[1]]
				if agent != "" && !slices.Contains(a.in.serves[name], agent) && !reported[m[1]] {
					reported[m[1]] = true
					a.fail("run %s (%s): %s, which does not serve %s, logged: %s", m[1], agent, name, agent, line)
				}
			}
		}
	}
}

// String is the figures on a few lines.
func (f schedFigures) String() string {
	outcomes := make([]string, 0, len(f.Outcomes))
	for _, k := range slices.Sorted(maps.Keys(f.Outcomes)) {
		outcomes = append(outcomes, fmt.Sprintf("%s %d", k, f.Outcomes[k]))
	}
	return fmt.Sprintf("%d runs (%s; %d not named by an acknowledged submission), %d events, %d attempts (%d resumed), %d superseded events, %d runs stored out of seq order, %d runs with two events under one seq, %d taken over by the other run of their pair (%d by a run whose loop submit failed; %d closing over %d appends lost in a fault);\n"+
		"  %d tool calls: %d denied fail-closed by the guard, %d allowed by it (%d requests in its record), %d outcomes unknown; %d Bash calls, %d Bash results recorded, %d executions counted (%d with their outcome recorded unknown);\n"+
		"  approvals: %d asked, %d answered by the approver, %d expired, %d conflicting answers refused naming the first and checked against the record;\n"+
		"  %d compactions; %d contexts and %d sessions checked as conversations; %d runs verified; %d hand-offs between definitions, %d requests handed back to the queue;\n"+
		"  runs by the definition they started on: %s",
		f.Runs, strings.Join(outcomes, ", "), f.NotSubmitted, f.Events, f.Attempts, f.Resumed, f.Superseded, f.OutOfOrder, f.TwoUnderOneSeq, f.Takeovers, f.TakenByUnacked, f.LostRuns, f.LostSeqs,
		f.Calls, f.Denied, f.GuardAllowed, f.GuardRequests, f.Unknown, f.BashCalls, f.BashResults, f.Executions, f.Unrecorded,
		f.ApprovalsAsked, f.ApprovalsAnswered, f.ApprovalsExpired, f.ConflictsChecked,
		f.Compactions, f.Contexts, f.Sessions, f.Verified, f.HandOffs, f.Retried, sortedCounts(f.Definitions))
}

var (
	ulidInText   = regexp.MustCompile(`[0-9A-HJKMNP-TV-Z]{26}`)
	numberInText = regexp.MustCompile(`[0-9]+`)
)

// groupFailures groups failures by their shape (ids and numbers left out),
// most frequent first, each with up to three examples.
func groupFailures(failures []string) []string {
	type group struct {
		shape    string
		examples []string
		runs     []string // the first run each failure names
		n        int
	}
	groups := map[string]*group{}
	var order []*group
	for _, f := range failures {
		first, _, _ := strings.Cut(f, "\n")
		shape := numberInText.ReplaceAllString(ulidInText.ReplaceAllString(first, "ID"), "N")
		g := groups[shape]
		if g == nil {
			g = &group{shape: shape}
			groups[shape] = g
			order = append(order, g)
		}
		g.n++
		if len(g.examples) < 3 {
			g.examples = append(g.examples, f)
		}
		if id := ulidInText.FindString(first); id != "" && !slices.Contains(g.runs, id) {
			g.runs = append(g.runs, id)
		}
	}
	slices.SortStableFunc(order, func(a, b *group) int { return b.n - a.n })
	out := make([]string, len(order))
	for i, g := range order {
		out[i] = fmt.Sprintf("%d× %s\n  e.g. %s", g.n, g.shape, strings.Join(g.examples, "\n  e.g. "))
		if len(g.runs) > 0 {
			out[i] += "\n  runs: " + strings.Join(g.runs, " ")
		}
	}
	return out
}

// sortedCounts is a map of counts as "k n, k n".
func sortedCounts[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %v", k, m[k])
	}
	return strings.Join(parts, ", ")
}
