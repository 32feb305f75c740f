package conformance_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
)

// A plugin the SDK serves with register holds its registration with a
// lease, as remote.Serve's Register does: live while it serves, removed when
// it stops, gone within seconds when its process is killed.
func TestTypeScriptLease(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := remote.NewRegistry(e.client)
	entry := func(plugin string) (remote.Entry, bool) {
		all, err := reg.Entries(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(all, func(x remote.Entry) bool { return x.Plugin == plugin })
		if i < 0 {
			return remote.Entry{}, false
		}
		return all[i], true
	}
	serve := map[string]any{"plugin": "ts-guard", "stages": []events.Stage{events.StageToolBefore}, "handler": "allow", "register": true}
	if err := e.ts.control("serve", serve); err != nil {
		t.Fatal(err)
	}
	if x, ok := entry("ts-guard"); !ok || !x.Leased || x.Gone {
		t.Fatalf("entry %+v (%v), want leased and live", x, ok)
	}
	if err := e.ts.control("stop", map[string]any{"plugin": "ts-guard", "stages": []events.Stage{events.StageToolBefore}}); err != nil {
		t.Fatal(err)
	}
	if x, ok := entry("ts-guard"); ok {
		t.Fatalf("entry %+v left after a clean stop", x)
	}

	// Killed: its lease lapses.
	if err := e.ts.control("serve", serve); err != nil {
		t.Fatal(err)
	}
	if err := e.ts.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		x, ok := entry("ts-guard")
		return ok && x.Gone
	}, "the killed plugin's registration to be gone")
}
