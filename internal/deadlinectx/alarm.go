package deadlinectx

import "time"

// Alarm is a timer kept armed between waits: it sends tick on its channel
// when it fires, without blocking (a full channel wakes its waiter
// already). A waiter that answers before its deadline leaves the timer as
// it is, so a wait costs no timer operation; a tick that comes early (armed
// for an earlier wait, or left over from one) wakes the waiter, which
// arms the alarm again for its own deadline. An Alarm is used by one
// waiter at a time.
type Alarm struct {
	timer *time.Timer
	armed time.Time // when timer fires; zero when it is known not to
}

// NewAlarm returns an Alarm, not armed, that sends tick on ch.
func NewAlarm[T any](ch chan<- T, tick T) *Alarm {
	t := time.AfterFunc(time.Hour, func() {
		select {
		case ch <- tick:
		default:
		}
	})
	t.Stop()
	return &Alarm{timer: t}
}

// Arm makes the alarm tick at deadline at the latest: it resets the timer
// only when the timer would fire after deadline or has fired by now.
func (a *Alarm) Arm(deadline, now time.Time) {
	if a.armed.IsZero() || a.armed.After(deadline) || !a.armed.After(now) {
		a.timer.Reset(deadline.Sub(now))
		a.armed = deadline
	}
}
