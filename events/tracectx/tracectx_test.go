package tracectx_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hookbus/hookbus/events/tracectx"
)

func TestParse(t *testing.T) {
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{good, true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", false}, // 00 is exactly 55
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},   // upper case
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"", false},
	} {
		c, err := tracectx.Parse(tc.in)
		if tc.ok != (err == nil) {
			t.Errorf("Parse(%q) = %v, want ok %v", tc.in, err, tc.ok)
			continue
		}
		if err != nil && !errors.Is(err, tracectx.ErrTraceparent) {
			t.Errorf("Parse(%q): %v does not wrap ErrTraceparent", tc.in, err)
		}
		if err == nil && tc.in == good && c.String() != good {
			t.Errorf("round trip: %q -> %q", good, c.String())
		}
	}
}

func TestDerivedIDsDiffer(t *testing.T) {
	run := "01JD3X8Y8Z9QW5V3M0K2G7H4FA"
	ids := map[tracectx.SpanID]string{}
	for name, id := range map[string]tracectx.SpanID{
		"run": tracectx.RunSpan(run), "chat1": tracectx.ChatSpan(run, 1), "chat2": tracectx.ChatSpan(run, 2),
		"tool": tracectx.ToolSpan(run, "call_1"), "hook": tracectx.HookSpan(run, "guard"),
		"hook2": tracectx.HookSpan(run, "other"),
	} {
		if prev, dup := ids[id]; dup {
			t.Fatalf("%s and %s share span id %s", name, prev, id)
		}
		ids[id] = name
	}
	if tracectx.RunTrace("not-a-ulid") == (tracectx.TraceID{}) {
		t.Fatal("zero trace id")
	}
}

func TestHookCall(t *testing.T) {
	if _, ok := tracectx.HookCall(context.Background(), "p"); ok {
		t.Fatal("HookCall on a bare context")
	}
	parent := tracectx.Context{Trace: tracectx.RunTrace("r"), Span: tracectx.RunSpan("r"), Flags: tracectx.FlagSampled}
	ctx := tracectx.WithHookCall(context.Background(), parent, "01JD3X8Y8Z9QW5V3M0K2G7H4FA")
	c, ok := tracectx.HookCall(ctx, "guard")
	if !ok || c.Trace != parent.Trace || c.Span != tracectx.HookSpan("01JD3X8Y8Z9QW5V3M0K2G7H4FA", "guard") || c.Flags != parent.Flags {
		t.Fatalf("HookCall = %v, %v", c, ok)
	}
}

// A run whose id is a ULID has that ULID as its trace id.
func ExampleRunTrace() {
	run := "01JD3X8Y8Z9QW5V3M0K2G7H4FA"
	c := tracectx.Context{Trace: tracectx.RunTrace(run), Span: tracectx.RunSpan(run), Flags: tracectx.FlagSampled}
	fmt.Println(c.Trace)
	fmt.Println(len(c.String()), c.String()[:36])
	// Output:
	// 019347d4791f4df85d8e8098a07891ea
	// 55 00-019347d4791f4df85d8e8098a07891ea-
}
