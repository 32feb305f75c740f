package interceptors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hookbus/hookbus/events"
)

func allowFunc(context.Context, *Request) (*Decision, error) { return nil, nil }

func plugins(regs []Registration) []string {
	var names []string
	for _, r := range regs {
		names = append(names, r.Plugin)
	}
	return names
}

func mustRegister(t *testing.T, c *Chain, reg Registration, ic Interceptor) func() {
	t.Helper()
	unregister, err := c.Register(reg, ic)
	if err != nil {
		t.Fatalf("Register(%s on %s): %v", reg.Plugin, reg.Stage, err)
	}
	return unregister
}

func TestRegisterErrors(t *testing.T) {
	c := NewChain(WithTrust(NewGrants("granted")))
	mustRegister(t, c, Registration{Plugin: "a", Stage: events.StageIntake}, Func(allowFunc))
	for _, tc := range []struct {
		reg  Registration
		ic   Interceptor
		want error
		msg  string
	}{
		{Registration{Plugin: "a", Stage: events.StageIntake}, Func(allowFunc), ErrDuplicate, "plugin a on intake"},
		{Registration{Plugin: "b", Stage: events.StageIntake}, nil, ErrInvalidRegistration, "nil interceptor"},
		{Registration{Plugin: "b", Stage: events.StageRunStarted}, Func(allowFunc), ErrInvalidRegistration, "observe-only"},
		{Registration{Plugin: "b", Stage: events.StageModelResponded}, Func(allowFunc), ErrPrivileged,
			"plugin b lacks privileged_hooks permission for stage model.responded"},
	} {
		_, err := c.Register(tc.reg, tc.ic)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Register(%+v) = %v, want %v saying %q", tc.reg, err, tc.want, tc.msg)
		}
	}
	// Without a Trust only built-ins may use privileged stages.
	if _, err := NewChain().Register(Registration{Plugin: "granted", Stage: events.StageContextAssembled}, Func(allowFunc)); !errors.Is(err, ErrPrivileged) {
		t.Errorf("no trust: %v", err)
	}
	mustRegister(t, c, Registration{Plugin: "granted", Stage: events.StageContextAssembled}, Func(allowFunc))
	mustRegister(t, NewChain(), Registration{Plugin: "core", Stage: events.StageModelResponded, Builtin: true}, Func(allowFunc))
}

func TestUnregister(t *testing.T) {
	c := NewChain()
	st := events.StageToolBefore
	un := mustRegister(t, c, Registration{Plugin: "a", Stage: st}, Func(allowFunc))
	mustRegister(t, c, Registration{Plugin: "b", Stage: st}, Func(allowFunc))
	un()
	un() // idempotent
	if got := plugins(c.Registrations(st)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("after unregister: %v", got)
	}
	// A stale unregister func does not remove a new registration of the
	// same plugin.
	mustRegister(t, c, Registration{Plugin: "a", Stage: st}, Func(allowFunc))
	un()
	if got := plugins(c.Registrations(st)); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("stale unregister removed a new registration: %v", got)
	}
	if !c.Unregister(st, "b") || c.Unregister(st, "b") || c.Unregister(events.StageRunStarted, "a") || c.Unregister(events.StageIntake, "a") {
		t.Fatal("Unregister reports wrongly")
	}
	if got := plugins(c.Registrations(st)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after Unregister: %v", got)
	}
	if c.Registrations(events.StageRunStarted) != nil {
		t.Fatal("registrations on an observe-only stage")
	}
}

func TestRegistrationsDefaults(t *testing.T) {
	c := NewChain()
	mustRegister(t, c, Registration{Plugin: "a", Stage: events.StageIntake}, Func(allowFunc))
	r := c.Registrations(events.StageIntake)[0]
	if r.Timeout != DefaultTimeout || r.Policy != PolicyIgnore || r.Mode != ModeMutate {
		t.Fatalf("registration without defaults: %+v", r)
	}
}

func TestChild(t *testing.T) {
	parent := NewChain()
	st := events.StageToolBefore
	mustRegister(t, parent, Registration{Plugin: "p1", Stage: st}, Func(allowFunc))
	mustRegister(t, parent, Registration{Plugin: "p-late", Stage: st, Order: 5}, Func(allowFunc))
	run := parent.Child()
	mustRegister(t, run, Registration{Plugin: "c1", Stage: st}, Func(allowFunc))
	mustRegister(t, run, Registration{Plugin: "c-first", Stage: st, Order: -1}, Func(allowFunc))
	// Registered on the parent after the child was made: the child sees it,
	// in registration order.
	mustRegister(t, parent, Registration{Plugin: "p2", Stage: st}, Func(allowFunc))
	// A child may reuse a parent's plugin name on its own registrations.
	mustRegister(t, run, Registration{Plugin: "p1", Stage: events.StageToolAfter}, Func(allowFunc))

	if got, want := plugins(run.Registrations(st)), []string{"c-first", "p1", "c1", "p2", "p-late"}; !slices.Equal(got, want) {
		t.Fatalf("child order %v, want %v", got, want)
	}
	if got, want := plugins(parent.Registrations(st)), []string{"p1", "p2", "p-late"}; !slices.Equal(got, want) {
		t.Fatalf("parent sees %v, want %v", got, want)
	}
	if parent.Has(events.StageToolAfter, "x", "a") || !run.Has(events.StageToolAfter, "x", "a") {
		t.Fatal("Has does not separate child and parent")
	}
	if run.Unregister(st, "p1") {
		t.Fatal("child unregistered a parent's registration")
	}
	grand := run.Child()
	mustRegister(t, grand, Registration{Plugin: "g", Stage: st, Order: 5}, Func(allowFunc))
	if got, want := plugins(grand.Registrations(st)), []string{"c-first", "p1", "c1", "p2", "p-late", "g"}; !slices.Equal(got, want) {
		t.Fatalf("grandchild order %v, want %v", got, want)
	}

	var calls []string
	var mu sync.Mutex
	rec := func(name string) Interceptor {
		return Func(func(context.Context, *Request) (*Decision, error) {
			mu.Lock()
			calls = append(calls, name)
			mu.Unlock()
			return nil, nil
		})
	}
	only := NewChain()
	mustRegister(t, only, Registration{Plugin: "parent", Stage: events.StageIntake}, rec("parent"))
	child := only.Child()
	mustRegister(t, child, Registration{Plugin: "child", Stage: events.StageIntake}, rec("child"))
	if _, err := child.Run(context.Background(), intakeEvent(t, "hi")); err != nil {
		t.Fatal(err)
	}
	if _, err := only.Run(context.Background(), intakeEvent(t, "hi")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []string{"parent", "child", "parent"}) {
		t.Fatalf("calls %v", calls)
	}
	// Trust is inherited.
	trusted := NewChain(WithTrust(NewGrants("ok"))).Child()
	mustRegister(t, trusted, Registration{Plugin: "ok", Stage: events.StageModelResponded}, Func(allowFunc))
}

func TestHasDoesNotAllocate(t *testing.T) {
	c := NewChain()
	mustRegister(t, c, Registration{Plugin: "fs", Stage: events.StageToolBefore, Tools: "fs_*|edit", Agents: "ops-*"}, Func(allowFunc))
	child := c.Child()
	mustRegister(t, child, Registration{Plugin: "x", Stage: events.StageIntake}, Func(allowFunc))
	mustRegister(t, child, Registration{Plugin: "re", Stage: events.StageToolAfter, Tools: "re:^mcp__.*__write"}, Func(allowFunc))
	var sink bool
	allocs := testing.AllocsPerRun(100, func() {
		sink = child.Has(events.StageToolBefore, "bash", "ops-1") ||
			child.Has(events.StageToolBefore, "edit", "ops-1") ||
			child.Has(events.StageStepStarted, "", "a") ||
			child.Has(events.StageRunCompleted, "", "a") ||
			child.Has(events.StageToolAfter, "mcp__fs__write_file", "a")
	})
	if allocs != 0 || !sink {
		t.Fatalf("Has: %v allocations, result %v", allocs, sink)
	}
}

// TestConcurrentRegisterRun runs chains while registrations change; -race
// checks the snapshots.
func TestConcurrentRegisterRun(t *testing.T) {
	c := NewChain()
	mustRegister(t, c, Registration{Plugin: "base", Stage: events.StageIntake}, Func(allowFunc))
	ev := intakeEvent(t, "hi")
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range 50 {
				name := fmt.Sprintf("w%d-%d", w, i)
				un, err := c.Register(Registration{Plugin: name, Stage: events.StageIntake, Order: i % 3}, Func(allowFunc))
				if err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					un()
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 50 {
				out, err := c.Run(context.Background(), ev)
				if err != nil || out.Decision != Allow || len(out.Records) == 0 {
					t.Errorf("Run: %+v, %v", out, err)
					return
				}
				_ = c.Has(events.StageIntake, "", "a")
				_ = c.Registrations(events.StageIntake)
			}
		})
	}
	wg.Wait()
	if n := len(c.Registrations(events.StageIntake)); n != 51 {
		t.Fatalf("%d registrations, want 51", n)
	}
}

// TestRunUsesSnapshot: a registration made while a Run is under way is not
// called by that Run.
func TestRunUsesSnapshot(t *testing.T) {
	c := NewChain()
	var lateCalls int
	mustRegister(t, c, Registration{Plugin: "first", Stage: events.StageIntake}, Func(func(context.Context, *Request) (*Decision, error) {
		if len(c.Registrations(events.StageIntake)) > 1 {
			return nil, nil
		}
		_, err := c.Register(Registration{Plugin: "late", Stage: events.StageIntake}, Func(func(context.Context, *Request) (*Decision, error) {
			lateCalls++
			return nil, nil
		}))
		return nil, err
	}))
	out, err := c.Run(context.Background(), intakeEvent(t, "hi"))
	if err != nil || len(out.Records) != 1 || lateCalls != 0 {
		t.Fatalf("records %+v, late calls %d, err %v", out, lateCalls, err)
	}
	if out, _ = c.Run(context.Background(), intakeEvent(t, "hi")); len(out.Records) != 2 || lateCalls != 1 {
		t.Fatalf("next run: records %d, late calls %d", len(out.Records), lateCalls)
	}
}

// A regular-expression matcher is compiled once and skips calls it does not
// match without calling the interceptor.
func TestRegexpMatcherSkips(t *testing.T) {
	c := NewChain()
	var called []string
	mustRegister(t, c, Registration{Plugin: "edits", Stage: events.StageToolBefore, Tools: "re:^(Edit|Write)$"}, Func(func(_ context.Context, req *Request) (*Decision, error) {
		called = append(called, req.Event.Subject)
		return nil, nil
	}))
	for _, tool := range []string{"Edit", "MultiEdit", "Write", "Bash"} {
		ev, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "a", SessionID: "s", RunID: "r", Subject: tool},
			events.ToolBefore{Call: events.ToolCall{ID: "c", Name: tool}})
		if err != nil {
			t.Fatal(err)
		}
		want := tool == "Edit" || tool == "Write"
		if got := c.Has(events.StageToolBefore, tool, "a"); got != want {
			t.Errorf("Has(%s) = %v", tool, got)
		}
		out, err := c.Run(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if (len(out.Records) == 1) != want {
			t.Errorf("%s: %d records", tool, len(out.Records))
		}
	}
	if len(called) != 2 || called[0] != "Edit" || called[1] != "Write" {
		t.Fatalf("called for %v, want [Edit Write]", called)
	}
}
