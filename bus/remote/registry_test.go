package remote_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

func TestRegistryPutListGetDelete(t *testing.T) {
	b := bustest.StartBus(t)
	reg := remote.NewRegistry(b)
	ctx := testCtx(t)
	entries := []interceptors.Registration{
		{Plugin: "late", Stage: events.StageToolBefore, Order: 10, Timeout: 2 * time.Second, Policy: interceptors.PolicyFail, Tools: "fs_*|bash", Agents: "ops-*"},
		{Plugin: "audit", Stage: events.StageToolAfter},
		{Plugin: "first", Stage: events.StageToolBefore, Order: -1, Mode: interceptors.ModeValidate},
		{Plugin: "gate", Stage: events.StageIntake},
		{Plugin: "second", Stage: events.StageToolBefore, Order: -1},
	}
	for _, e := range entries {
		if err := reg.Put(ctx, e); err != nil {
			t.Fatalf("Put(%s on %s): %v", e.Plugin, e.Stage, err)
		}
	}
	list, err := reg.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range list {
		got = append(got, remote.RegistryKey(r.Stage, r.Plugin))
	}
	want := []string{"intake.gate", "tool.before.first", "tool.before.second", "tool.before.late", "tool.after.audit"}
	if !slices.Equal(got, want) {
		t.Fatalf("List: %v, want %v (stage, order, then write order)", got, want)
	}
	if list[3] != entries[0] {
		t.Fatalf("List kept %+v, want %+v", list[3], entries[0])
	}

	g, err := reg.Get(ctx, events.StageToolBefore, "late")
	if err != nil || g != entries[0] {
		t.Fatalf("Get: %+v (%v), want %+v", g, err, entries[0])
	}
	// Put replaces.
	changed := entries[0]
	changed.Order = 20
	if err := reg.Put(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if g, _ := reg.Get(ctx, events.StageToolBefore, "late"); g.Order != 20 {
		t.Fatalf("after a second Put, order %d, want 20", g.Order)
	}

	if err := reg.Delete(ctx, events.StageToolBefore, "late"); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Get(ctx, events.StageToolBefore, "late"); !errors.Is(err, remote.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := reg.Delete(ctx, events.StageToolBefore, "late"); !errors.Is(err, remote.ErrNotFound) ||
		!strings.Contains(err.Error(), "no registration of plugin late on tool.before") {
		t.Fatalf("second Delete: %v, want ErrNotFound naming plugin and stage", err)
	}
	if list, _ = reg.List(ctx); len(list) != 4 {
		t.Fatalf("List after Delete: %d entries, want 4", len(list))
	}
}

func TestRegistryPutValidates(t *testing.T) {
	b := bustest.StartBus(t)
	reg := remote.NewRegistry(b)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name     string
		reg      interceptors.Registration
		sentinel error
		text     string
	}{
		{"unknown stage", interceptors.Registration{Plugin: "p", Stage: "tool.nope"}, interceptors.ErrInvalidRegistration, `stage "tool.nope" is not a hookbus stage`},
		{"observe-only stage", interceptors.Registration{Plugin: "p", Stage: events.StageRunCompleted}, interceptors.ErrInvalidRegistration, "observe-only"},
		{"not a subject token", interceptors.Registration{Plugin: "a.b", Stage: events.StageIntake}, events.ErrInvalidID, `plugin id "a.b"`},
		{"not a key", interceptors.Registration{Plugin: "pii@v2", Stage: events.StageIntake}, events.ErrInvalidID, `plugin id "pii@v2" cannot be a registry key`},
		{"timeout over the cap", interceptors.Registration{Plugin: "p", Stage: events.StageIntake, Timeout: time.Minute}, interceptors.ErrInvalidRegistration, "exceeds the 30s cap"},
		{"builtin", interceptors.Registration{Plugin: "p", Stage: events.StageIntake, Builtin: true}, interceptors.ErrInvalidRegistration, "builtin"},
		{"bad glob", interceptors.Registration{Plugin: "p", Stage: events.StageToolBefore, Tools: "[a"}, interceptors.ErrInvalidRegistration, "tools"},
	} {
		err := reg.Put(ctx, tc.reg)
		if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %v, want %v saying %q", tc.name, err, tc.sentinel, tc.text)
		}
	}
	if list, err := reg.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("List after refused puts: %+v (%v), want nothing", list, err)
	}
	// Remote is the transport's to set: it is not stored.
	if err := reg.Put(ctx, interceptors.Registration{Plugin: "p", Stage: events.StageIntake, Remote: true}); err != nil {
		t.Fatal(err)
	}
	if g, err := reg.Get(ctx, events.StageIntake, "p"); err != nil || g.Remote {
		t.Fatalf("Get: %+v (%v), want Remote clear", g, err)
	}
}

func TestRegistryPrivilegedNeedsGrant(t *testing.T) {
	b := bustest.StartBus(t)
	reg := remote.NewRegistry(b)
	ctx := testCtx(t)
	for _, stage := range []events.Stage{events.StageContextAssembled, events.StageModelResponded} {
		err := reg.Put(ctx, interceptors.Registration{Plugin: "rewriter", Stage: stage})
		if !errors.Is(err, interceptors.ErrPrivileged) || !strings.Contains(err.Error(), "plugin rewriter lacks privileged_hooks permission for stage "+string(stage)) {
			t.Fatalf("Put on %s without grant: %v, want ErrPrivileged naming plugin and stage", stage, err)
		}
	}
	if err := reg.Grant(ctx, "rewriter"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Put(ctx, interceptors.Registration{Plugin: "rewriter", Stage: events.StageContextAssembled}); err != nil {
		t.Fatalf("Put after Grant: %v", err)
	}
	if g, err := reg.Granted(ctx); err != nil || !slices.Equal(g, []string{"rewriter"}) {
		t.Fatalf("Granted: %v (%v)", g, err)
	}
	if err := reg.Revoke(ctx, "rewriter"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Revoke(ctx, "rewriter"); !errors.Is(err, remote.ErrNotFound) || !strings.Contains(err.Error(), "plugin rewriter has no grant") {
		t.Fatalf("second Revoke: %v, want ErrNotFound", err)
	}
	if err := reg.Put(ctx, interceptors.Registration{Plugin: "rewriter", Stage: events.StageModelResponded}); !errors.Is(err, interceptors.ErrPrivileged) {
		t.Fatalf("Put after Revoke: %v, want ErrPrivileged", err)
	}
	// The registration made while granted stays in the registry.
	if _, err := reg.Get(ctx, events.StageContextAssembled, "rewriter"); err != nil {
		t.Fatalf("Get: %v", err)
	}
	if err := reg.Grant(ctx, "bad.id"); !errors.Is(err, events.ErrInvalidID) {
		t.Fatalf("Grant(bad.id): %v, want ErrInvalidID", err)
	}
}

// TestRegistryEntriesFromElsewhere: entries written to the bucket directly
// are read with Builtin cleared; ones that do not parse or whose key does
// not match are left out.
func TestRegistryEntriesFromElsewhere(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	kv, err := b.JetStream().KeyValue(ctx, b.Names().Hooks)
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range map[string]string{
		"tool.before.sneaky": `{"plugin":"sneaky","stage":"tool.before","builtin":true}`,
		"intake.garbage":     `not json`,
		"intake.mismatch":    `{"plugin":"other","stage":"intake"}`,
		"intake.slow":        `{"plugin":"slow","stage":"intake","timeout":"forever"}`,
	} {
		if _, err := kv.Put(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := remote.NewRegistry(b).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Plugin != "sneaky" || list[0].Builtin {
		t.Fatalf("List: %+v, want only sneaky, with builtin cleared", list)
	}
}

func TestRegistryUnprovisioned(t *testing.T) {
	_, nc := bustest.Start(t)
	b, err := bus.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	_, err = remote.NewRegistry(b).List(ctx)
	if !errors.Is(err, remote.ErrRegistry) || !strings.Contains(err.Error(), "hookbus_hooks does not exist") {
		t.Fatalf("List: %v, want ErrRegistry naming the bucket", err)
	}
	if _, err := remote.WatchTrust(ctx, b); !errors.Is(err, remote.ErrRegistry) || !strings.Contains(err.Error(), "hookbus_trust") {
		t.Fatalf("WatchTrust: %v, want ErrRegistry naming the bucket", err)
	}
}

func TestTrustFollowsGrants(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	reg := remote.NewRegistry(b)
	if err := reg.Grant(ctx, "early"); err != nil {
		t.Fatal(err)
	}
	trust, err := remote.WatchTrust(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer trust.Stop()
	if !trust.Privileged("early") || trust.Privileged("late") {
		t.Fatalf("initial grants %v, want [early]", trust.Plugins())
	}
	if err := reg.Grant(ctx, "late"); err != nil {
		t.Fatal(err)
	}
	if err := trust.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	if got := trust.Plugins(); !slices.Equal(got, []string{"early", "late"}) {
		t.Fatalf("after Grant: %v", got)
	}
	if err := reg.Revoke(ctx, "early"); err != nil {
		t.Fatal(err)
	}
	if err := trust.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	if trust.Privileged("early") || !trust.Privileged("late") {
		t.Fatalf("after Revoke: %v, want [late]", trust.Plugins())
	}
	// A value that grants nothing is no grant.
	kv, err := b.JetStream().KeyValue(ctx, b.Names().Trust)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "late", []byte(`{"privileged_hooks":false}`)); err != nil {
		t.Fatal(err)
	}
	if err := trust.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	if trust.Privileged("late") {
		t.Fatal(`{"privileged_hooks":false} grants privileged_hooks`)
	}
	trust.Stop()
	trust.Stop() // idempotent
	if err := trust.Synced(ctx); !errors.Is(err, remote.ErrRegistry) {
		t.Fatalf("Synced after Stop: %v, want ErrRegistry (watch ended)", err)
	}
}
