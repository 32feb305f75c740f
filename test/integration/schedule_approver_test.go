package integration

import (
	"context"
	"hash/fnv"
	"regexp"
	"strings"
	"time"

	"github.com/hookbus/hookbus/events"
)

// The schedule's approver: a human answering agent B's calls from the CLI
// (observer approve|reject, each a process of its own) while workers and
// the server die, by each run's plan; on runs alone in their session it
// also gives a second, conflicting answer to the first call, which must be
// refused naming the first.

// approverGiveUp is how long the approver keeps trying to answer a run
// whose answers fail for reasons that may pass (the server away).
const approverGiveUp = 5 * time.Minute

// approvers is how many approvers answer at once, each the runs of its
// share.
const approvers = 3

// approve answers the waiting runs of share i (of approvers) until ctx
// ends.
func (l *load) approve(ctx context.Context, i int) {
	for ctx.Err() == nil {
		for _, w := range l.tr.pending() {
			if ctx.Err() != nil {
				return
			}
			if shareOf(w.run) != i {
				continue
			}
			l.answer(ctx, w)
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// shareOf is the approver a run falls to.
func shareOf(run string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(run))
	return int(h.Sum32() % approvers)
}

// answer gives run w its answers, by its plan.
func (l *load) answer(ctx context.Context, w waiting) {
	l.mu.Lock()
	sub := l.runs[w.run]
	a := l.answers[w.run]
	if a == nil {
		a = &answering{done: map[string]bool{}, since: time.Now()}
		l.answers[w.run] = a
	}
	l.mu.Unlock()
	if time.Now().Before(a.next) || a.gaveUp {
		return
	}
	p, alone := planApprove, false
	if sub != nil {
		p, alone = sub.plan, !sub.pair
	}
	if p == planExpire {
		if time.Since(w.asked) < approvalExpiry+2*time.Minute {
			return
		}
		if !a.noted {
			a.noted = true
			l.note("run %s: calls %v not resolved by their expiry (%v) %v after they were asked; answering them",
				w.run, w.calls, approvalExpiry, time.Since(w.asked).Round(time.Second))
		}
		p = planApprove
	}
	if !w.settled && time.Since(w.asked) < 10*time.Second {
		return // the step's other call is still being asked about or run
	}
	for _, c := range w.calls {
		if a.done[c] {
			continue
		}
		action := events.ActionApprove
		if a.first == "" && p == planContinue {
			action = events.ActionRejectAndContinue
		} else if a.first == "" && p == planReject {
			action = events.ActionReject
		}
		done, mine := l.cli(ctx, w.run, c, action, "first", a)
		if !done {
			a.next = time.Now().Add(time.Second)
			if time.Since(a.since) > approverGiveUp {
				a.gaveUp = true
				l.note("run %s call %s: the approver gave up answering after %v: %s", w.run, c, approverGiveUp, a.lastErr)
			}
			return
		}
		a.done[c] = true
		if a.first == "" {
			a.first, a.firstAct = c, action
			if alone && len(w.calls) == 2 && mine {
				// The other call still waits: the run cannot go on, so
				// the conflicting answer meets the first one recorded
				// (this one; an expiry that came first is no conflict
				// of the approver's).
				l.conflict(ctx, w.run, c, action, a)
			}
		}
	}
}

// answerArgs are the observer arguments of an answer, given as user.
func (l *load) answerArgs(user, run, call, action, note string) []string {
	verb := "approve"
	var extra []string
	switch action {
	case events.ActionReject:
		verb, extra = "reject", []string{"--reason", "not in the schedule's plan"}
	case events.ActionRejectAndContinue:
		verb, extra = "reject", []string{"--reason", "not now", "--continue"}
	}
	args := append([]string{verb, run, "--call", call, "--nats", l.fl.urls(user), "--note", note}, extra...)
	return append(args, l.fl.replicas...)
}

// cli gives one answer; it reports whether the call is answered now (by
// this answer, by an earlier send of it whose reply was lost, or by an
// expiry) or has nothing left to answer (the run ended), and whether this
// answer is the call's first (mine).
func (l *load) cli(ctx context.Context, run, call, action, note string, a *answering) (done, mine bool) {
	if ctx.Err() != nil {
		return false, false
	}
	res, err := runProc(40*time.Second, "observer", l.answerArgs(userApprover, run, call, action, note)...)
	s := res.stderr
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil && res.code == 0 && strings.Contains(res.stdout, "recorded"):
		l.answered++
		if a.acked == nil {
			a.acked = map[string]string{}
		}
		a.acked[call] = action
		return true, true
	case strings.Contains(s, "answered already: ") && strings.Contains(s, `[note: declared "`+note+`"]`):
		l.recovered++ // an earlier send of this answer was recorded; its reply was lost
		return true, true
	case strings.Contains(s, "answered already: ") && strings.Contains(s, "by hookbus"):
		l.expiredQ++
		return true, false
	case strings.Contains(s, "answered already: "):
		l.notes = append(l.notes, "run "+run+" call "+call+": answered by someone other than the approver: "+oneLine(s))
		return true, false
	case strings.Contains(s, "has ended"):
		return true, false
	}
	l.retries++
	a.lastErr = oneLine(s)
	if err != nil {
		a.lastErr = err.Error()
	}
	return false, false
}

var answerIDNamed = regexp.MustCompile(`\(answer ([0-9A-Z]{26})\)`)

// conflict gives call the opposite answer (note "second"), as another
// person (on the cluster: user alice, the first answers being approver's),
// which must be refused naming the first: its action, who gave it, its
// note, and its answer id.
func (l *load) conflict(ctx context.Context, run, call, first string, a *answering) {
	action := events.ActionReject
	if first != events.ActionApprove {
		action = events.ActionApprove
	}
	want := "answered already: " + first + " by " + l.fl.identity(userApprover) + " (cli) [note: declared \"first\"]"
	for try := 0; try < 30 && ctx.Err() == nil; try++ {
		res, err := runProc(40*time.Second, "observer", l.answerArgs(userSecond, run, call, action, "second")...)
		s := res.stderr
		switch {
		case err == nil && res.code == 0:
			l.note("run %s call %s: a second, conflicting answer (%s) was accepted after the first (%s): %s", run, call, action, first, oneLine(res.stdout))
			return
		case strings.Contains(s, want):
			l.mu.Lock()
			l.refused++
			a.conflict = true
			if m := answerIDNamed.FindStringSubmatch(s); m != nil {
				a.named = m[1]
			}
			l.mu.Unlock()
			return
		case first == events.ActionReject && strings.Contains(s, "has ended"):
			// The first answer ended the run (rejected): refused, and there
			// is nothing left to name.
			l.mu.Lock()
			l.refusedEnded++
			l.mu.Unlock()
			return
		case strings.Contains(s, "answered already") || strings.Contains(s, "has ended"):
			l.note("run %s call %s: the conflicting answer (%s) was refused without naming the first (%s): %s", run, call, action, first, oneLine(s))
			return
		}
		time.Sleep(time.Second) // the server away: try again
	}
	if ctx.Err() == nil {
		l.note("run %s call %s: the conflicting answer could not be tried", run, call)
	}
}

// oneLine is s on one line, at most 400 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}
