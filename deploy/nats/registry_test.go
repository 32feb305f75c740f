package natsconf_test

import (
	"slices"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// TestAuditorReadsTheRegistry: what "observer hooks list" does as the
// auditor (list the registry and the grants, get one entry) works without a
// permission error, and the auditor's writes to either bucket are refused.
func TestAuditorReadsTheRegistry(t *testing.T) {
	f := startSingle(t)
	admin, _ := f.connect(t, "admin")
	auditor, errs := f.connect(t, "auditor")
	ctx := testContext(t)

	ab, err := bus.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.NewRegistry(ab).Grant(ctx, "plugin-policy"); err != nil {
		t.Fatal(err)
	}
	for _, reg := range []interceptors.Registration{
		{Plugin: "plugin-pii", Stage: events.StageToolAfter},
		{Plugin: "plugin-policy", Stage: events.StageContextAssembled},
	} {
		if err := remote.NewRegistry(ab).Put(ctx, reg); err != nil {
			t.Fatal(err)
		}
	}

	b, err := bus.New(auditor, bus.WithDefaultTimeout(wait))
	if err != nil {
		t.Fatal(err)
	}
	r := remote.NewRegistry(b)
	regs, err := r.List(ctx)
	if err != nil || len(regs) != 2 {
		t.Fatalf("list as auditor: %v, %v", regs, err)
	}
	granted, err := r.Granted(ctx)
	if err != nil || !slices.Equal(granted, []string{"plugin-policy"}) {
		t.Fatalf("grants as auditor: %v, %v", granted, err)
	}
	if _, err := r.Get(ctx, events.StageToolAfter, "plugin-pii"); err != nil {
		t.Fatalf("get as auditor: %v", err)
	}
	noErrors(t, auditor)

	denyPublish(t, auditor, errs, "$KV.hookbus_hooks.tool.after.plugin-x")
	denyPublish(t, auditor, errs, "$KV.hookbus_trust.plugin-x")
}
