package interceptors

import (
	"testing"

	"github.com/hookbus/hookbus/events"
)

// A memo keeps one thing for one event; what it no longer keeps (replaced,
// or at the run's end, or stored after it) is released once.
func TestMemo(t *testing.T) {
	a := newEvent(t, events.StageIntake, "", events.Intake{Prompt: "a"})
	b := newEvent(t, events.StageIntake, "", events.Intake{Prompt: "b"})
	released := map[string]int{}
	rel := func(name string) func() { return func() { released[name]++ } }

	var m Memo
	if m.Load(a) != nil {
		t.Fatal("an empty memo keeps something")
	}
	m.Store(a, "A", rel("A"))
	if m.Load(a) != "A" || m.Load(b) != nil {
		t.Fatalf("Load(a) = %v, Load(b) = %v: want A, nothing", m.Load(a), m.Load(b))
	}
	m.Store(b, "B", rel("B"))
	if m.Load(a) != nil || m.Load(b) != "B" || released["A"] != 1 || released["B"] != 0 {
		t.Fatalf("after a Store for b: Load(a) %v, Load(b) %v, released %v", m.Load(a), m.Load(b), released)
	}
	m.end()
	if m.Load(b) != nil || released["B"] != 1 {
		t.Fatalf("after the run: Load(b) %v, released %v", m.Load(b), released)
	}
	m.Store(a, "late", rel("late"))
	if m.Load(a) != nil || released["late"] != 1 {
		t.Fatalf("Store after the run: Load %v, released %v", m.Load(a), released)
	}
	m.end()
	if released["A"] != 1 || released["B"] != 1 || released["late"] != 1 {
		t.Fatalf("released %v, want each once", released)
	}
	var none *Memo
	none.Store(a, "x", rel("x"))
	if none.Load(a) != nil || released["x"] != 1 {
		t.Fatalf("nil memo: Load %v, released %v", none.Load(a), released)
	}
}
