package deadlinectx

import (
	"testing"
	"time"
)

// An alarm ticks at the earliest deadline it was armed for, is not reset
// for a later one while it will still tick, and is armed again once it
// ticked.
func TestAlarmArm(t *testing.T) {
	ch := make(chan int, 1)
	a := NewAlarm(ch, 7)
	now := time.Now()
	a.Arm(now.Add(20*time.Millisecond), now)
	a.Arm(now.Add(time.Hour), now) // later: the earlier tick stands
	if !a.armed.Equal(now.Add(20 * time.Millisecond)) {
		t.Fatalf("armed for %v, want the earlier deadline", a.armed)
	}
	select {
	case v := <-ch:
		if v != 7 {
			t.Fatalf("tick %d, want 7", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the alarm never ticked")
	}
	later := time.Now()
	a.Arm(later.Add(time.Hour), later) // it ticked: armed again
	if !a.armed.Equal(later.Add(time.Hour)) {
		t.Fatalf("armed for %v after a tick, want %v", a.armed, later.Add(time.Hour))
	}
	a.timer.Stop()
}
