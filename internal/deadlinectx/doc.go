// Package deadlinectx provides a context with a deadline whose timer is
// armed only when something waits on it (calls Done). A call that returns
// before its deadline without selecting on ctx.Done (a policy check, a
// lookup in memory) then costs no timer, no channel and no lock: Err and
// Deadline answer from the clock. An Alarm is the timer a waiter keeps
// armed between waits, reset only when it would tick too late. It imports
// nothing of hookbus.
package deadlinectx
