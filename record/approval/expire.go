package approval

import (
	"context"
	"time"

	"github.com/hookbus/hookbus/events"
)

// Expire records the expiry of every call of a run that still waits past
// its expires_at: approval.resolved by hookbus (channel expiry, expired),
// resolving it by its on_expiry (reject_and_continue when it names no
// action), on the plain subject and fenced as any answer (an answer given
// first wins). It returns how many calls it expired and the earliest
// expiry of the calls that still wait for a later one (zero: none). Its
// errors are Answer's: ErrBadAnswer for a run that has no events or ended
// (nothing waits), ErrRunBusy, ErrUnrecorded, ErrCorruptRun.
func Expire(ctx context.Context, deps Deps, agent, session, run string) (expired int, next time.Time, err error) {
	a := &answering{deps: deps.withDefaults(), agent: agent, session: session, run: run}
	plan := func(st *state) ([]resolution, error) {
		now := time.Now().UTC()
		next = time.Time{}
		var todo []resolution
		for _, cs := range st.Waiting() {
			ex := cs.Request.ExpiresAt
			switch {
			case ex.IsZero():
				continue
			case now.Before(ex):
				if next.IsZero() || ex.Before(next) {
					next = ex
				}
				continue
			}
			action := cs.Request.OnExpiry
			if !events.ValidAction(action) {
				action = events.ActionRejectAndContinue
			}
			todo = append(todo, resolution{cs: cs, res: events.ApprovalResolved{
				CallID: cs.Request.Call.ID, Approved: action == events.ActionApprove, Action: action,
				By: events.IdentityHookbus, Actor: events.Actor{Identity: events.IdentityHookbus, Channel: events.ChannelExpiry},
				Expired: true, AnsweredAt: now, Reason: "no answer by " + ex.UTC().Format(time.RFC3339), AnswerID: events.NewID(),
			}})
		}
		return todo, nil
	}
	_, err = a.record(ctx, plan, func(events.ApprovalResolved) { expired++ })
	return expired, next, err
}
