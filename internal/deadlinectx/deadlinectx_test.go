package deadlinectx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/internal/deadlinectx"
)

func TestEndsAtDeadlineWithoutDone(t *testing.T) {
	c := deadlinectx.New(context.Background(), time.Now().Add(-time.Millisecond))
	defer c.Cancel()
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline = %v, want DeadlineExceeded", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed for a context whose deadline passed")
	}
}

func TestDoneClosesAtDeadline(t *testing.T) {
	c := deadlinectx.New(context.Background(), time.Now().Add(20*time.Millisecond))
	defer c.Cancel()
	if err := c.Err(); err != nil {
		t.Fatalf("Err before the deadline = %v", err)
	}
	<-c.Done()
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err = %v, want DeadlineExceeded", err)
	}
	if got := context.Cause(c); !errors.Is(got, context.DeadlineExceeded) {
		t.Fatalf("Cause = %v", got)
	}
}

func TestFollowsParent(t *testing.T) {
	for _, armed := range []bool{false, true} {
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
		c := deadlinectx.New(parent, time.Now().Add(time.Hour))
		if c.Value(ctxKey{}) != "v" {
			t.Fatal("the parent's value is lost")
		}
		var done <-chan struct{}
		if armed {
			done = c.Done()
		}
		cancel()
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("armed %v: Err after the parent's cancel = %v", armed, err)
		}
		if !armed {
			done = c.Done()
		}
		<-done
		c.Cancel()
	}
}

func TestDeadlineIsTheEarlier(t *testing.T) {
	early := time.Now().Add(time.Minute)
	parent, cancel := context.WithDeadline(context.Background(), early)
	defer cancel()
	c := deadlinectx.New(parent, early.Add(time.Hour))
	defer c.Cancel()
	if d, ok := c.Deadline(); !ok || !d.Equal(early) {
		t.Fatalf("Deadline = %v %v, want the parent's %v", d, ok, early)
	}
	c2 := deadlinectx.New(parent, early.Add(-time.Second))
	defer c2.Cancel()
	if d, _ := c2.Deadline(); !d.Equal(early.Add(-time.Second)) {
		t.Fatalf("Deadline = %v, want its own", d)
	}
}

func TestCancelEndsChildren(t *testing.T) {
	c := deadlinectx.New(context.Background(), time.Now().Add(time.Hour))
	child, cancel := context.WithCancel(c)
	defer cancel()
	c.Cancel()
	<-child.Done()
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after Cancel = %v", err)
	}
	c.Cancel() // idempotent
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after a second Cancel = %v", err)
	}
}

type ctxKey struct{}

func TestWatchTellsCancelAndArmsNothing(t *testing.T) {
	parent, stop := context.WithCancel(context.Background())
	defer stop()
	due := time.Now().Add(time.Hour)
	c := deadlinectx.New(parent, due)
	wake := make(chan struct{}, 1)
	pd, dl, ok := c.Watch(wake)
	if !ok || pd != parent.Done() || !dl.Equal(due) {
		t.Fatalf("Watch = %v, %v, %v; want the parent's Done, %v, true", pd, dl, ok, due)
	}
	if _, _, ok := c.Watch(make(chan struct{}, 1)); ok {
		t.Fatal("a second Watch succeeded")
	}
	c.Cancel()
	select {
	case <-wake:
	default:
		t.Fatal("Cancel did not send on the watch's channel")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err = %v, want Canceled", c.Err())
	}
	if _, _, ok := c.Watch(wake); ok {
		t.Fatal("Watch of an ended context succeeded")
	}
}

func TestWatchRefusedOnceArmed(t *testing.T) {
	c := deadlinectx.New(context.Background(), time.Now().Add(time.Hour))
	defer c.Cancel()
	_ = c.Done()
	if _, _, ok := c.Watch(make(chan struct{}, 1)); ok {
		t.Fatal("Watch succeeded after Done")
	}
	c2 := deadlinectx.New(context.Background(), time.Now().Add(time.Hour))
	wake := make(chan struct{}, 1)
	if _, _, ok := c2.Watch(wake); !ok {
		t.Fatal("Watch refused")
	}
	c2.Unwatch()
	c2.Cancel()
	select {
	case <-wake:
		t.Fatal("Cancel after Unwatch sent on the channel")
	default:
	}
}
