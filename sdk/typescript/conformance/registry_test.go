package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go/jetstream"
)

// The SDK writes registry entries as remote.Registry.Put does, byte for byte,
// refuses what Put refuses (for the same reason), and removes them as
// Delete does.
func TestTypeScriptRegistry(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := remote.NewRegistry(e.client)
	if err := reg.Grant(ctx, "trusted"); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, e.client.Names().Hooks)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		in   map[string]any // what the SDK is given
		want string         // the Go registration it stands for, as JSON
	}{
		{"defaults", map[string]any{"plugin": "pii", "stage": "tool.before"}, `{"plugin":"pii","stage":"tool.before"}`},
		{"every field", map[string]any{"plugin": "pii", "stage": "tool.after", "order": -3, "timeout": "2500ms", "policy": "fail",
			"mode": "mutate", "tools": "fetch_*|bash", "kinds": "web.fetch|shell", "agents": "re:^support-"},
			`{"plugin":"pii","stage":"tool.after","order":-3,"timeout":"2.5s","policy":"fail","mode":"mutate","tools":"fetch_*|bash","kinds":"web.fetch|shell","agents":"re:^support-"}`},
		{"kinds as a list", map[string]any{"plugin": "no-rm", "stage": "tool.before", "kinds": []string{"shell", "file.*"}}, `{"plugin":"no-rm","stage":"tool.before","kinds":"shell|file.*"}`},
		{"timeout in ms", map[string]any{"plugin": "slow", "stage": "stop", "timeout": 30000}, `{"plugin":"slow","stage":"stop","timeout":"30s"}`},
		{"timeout under a second", map[string]any{"plugin": "fast", "stage": "intake", "timeout": 250}, `{"plugin":"fast","stage":"intake","timeout":"250ms"}`},
		{"validate", map[string]any{"plugin": "v", "stage": "subagent.before", "mode": "validate", "tools": "[a-c]*"}, `{"plugin":"v","stage":"subagent.before","mode":"validate","tools":"[a-c]*"}`},
		{"shadow", map[string]any{"plugin": "s/1=x", "stage": "tool.before", "mode": "shadow", "agents": "a<b>&c"}, `{"plugin":"s/1=x","stage":"tool.before","mode":"shadow","agents":"a<b>&c"}`},
		{"privileged, granted", map[string]any{"plugin": "trusted", "stage": "model.responded"}, `{"plugin":"trusted","stage":"model.responded"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.ts.control("register", map[string]any{"registration": tc.in}); err != nil {
				t.Fatalf("register: %v", err)
			}
			var want interceptors.Registration
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			wantBytes, _ := json.Marshal(want)
			entry, err := kv.Get(ctx, remote.RegistryKey(want.Stage, want.Plugin))
			if err != nil {
				t.Fatal(err)
			}
			if string(entry.Value()) != string(wantBytes) {
				t.Errorf("the SDK wrote %s, Put writes %s", entry.Value(), wantBytes)
			}
			got, err := reg.Get(ctx, want.Stage, want.Plugin)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if gb, _ := json.Marshal(got); string(gb) != string(wantBytes) {
				t.Errorf("the loop reads %s, want %s", gb, wantBytes)
			}
			if err := e.ts.control("unregister", map[string]any{"stage": want.Stage, "plugin": want.Plugin}); err != nil {
				t.Fatalf("unregister: %v", err)
			}
			if _, err := reg.Get(ctx, want.Stage, want.Plugin); !errors.Is(err, remote.ErrNotFound) {
				t.Fatalf("after unregister, Get: %v", err)
			}
			var ce *controlError
			if err := e.ts.control("unregister", map[string]any{"stage": want.Stage, "plugin": want.Plugin}); !errors.As(err, &ce) || ce.Kind != "not_found" {
				t.Fatalf("unregister again: %v, want not_found", err)
			}
		})
	}

	for _, tc := range []struct {
		name string
		in   map[string]any
		kind string
	}{
		{"observe-only stage", map[string]any{"plugin": "p", "stage": "run.started"}, "invalid"},
		{"unknown stage", map[string]any{"plugin": "p", "stage": "tool.sideways"}, "invalid"},
		{"timeout over the cap", map[string]any{"plugin": "p", "stage": "intake", "timeout": "31s"}, "invalid"},
		{"negative timeout", map[string]any{"plugin": "p", "stage": "intake", "timeout": "-1s"}, "invalid"},
		{"timeout not a duration", map[string]any{"plugin": "p", "stage": "intake", "timeout": "soon"}, "invalid"},
		{"unknown policy", map[string]any{"plugin": "p", "stage": "intake", "policy": "sometimes"}, "invalid"},
		{"unknown mode", map[string]any{"plugin": "p", "stage": "intake", "mode": "audit"}, "invalid"},
		{"validate where deny is refused", map[string]any{"plugin": "p", "stage": "tool.after", "mode": "validate"}, "invalid"},
		{"tools on intake", map[string]any{"plugin": "p", "stage": "intake", "tools": "bash"}, "invalid"},
		{"kinds on subagent.before", map[string]any{"plugin": "p", "stage": "subagent.before", "kinds": "agent"}, "invalid"},
		{"no such kind", map[string]any{"plugin": "p", "stage": "tool.before", "kinds": "bash"}, "invalid"},
		{"kinds as a regexp", map[string]any{"plugin": "p", "stage": "tool.before", "kinds": "re:sh"}, "invalid"},
		{"malformed glob", map[string]any{"plugin": "p", "stage": "tool.before", "tools": "[a"}, "invalid"},
		{"malformed range", map[string]any{"plugin": "p", "stage": "tool.before", "agents": "a[b-]"}, "invalid"},
		{"empty alternative", map[string]any{"plugin": "p", "stage": "tool.before", "tools": "a||b"}, "invalid"},
		{"empty expression", map[string]any{"plugin": "p", "stage": "tool.before", "tools": "re:"}, "invalid"},
		{"lookahead", map[string]any{"plugin": "p", "stage": "tool.before", "tools": "re:^(?!rm)"}, "invalid"},
		{"plugin with a dot", map[string]any{"plugin": "a.b", "stage": "intake"}, "invalid"},
		{"plugin with a space", map[string]any{"plugin": "a b", "stage": "intake"}, "invalid"},
		{"plugin not a key", map[string]any{"plugin": "a+b", "stage": "intake"}, "invalid"},
		{"builtin", map[string]any{"plugin": "p", "stage": "intake", "builtin": true}, "invalid"},
		{"privileged, not granted", map[string]any{"plugin": "p", "stage": "context.assembled"}, "privileged"},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			var ce *controlError
			if err := e.ts.control("register", map[string]any{"registration": tc.in}); !errors.As(err, &ce) || ce.Kind != tc.kind {
				t.Fatalf("register: %v, want a refusal of kind %s", err, tc.kind)
			}
			// Put refuses it too.
			b, _ := json.Marshal(tc.in)
			var r interceptors.Registration
			if err := json.Unmarshal(b, &r); err != nil {
				return // the Go form does not even parse
			}
			if err := reg.Put(ctx, r); err == nil {
				t.Fatalf("Put accepts %s, which the SDK refused (%v)", b, ce)
			}
		})
	}
	if keys, err := kv.ListKeys(ctx); err == nil {
		for k := range keys.Keys() {
			t.Errorf("entry %s left in the registry", k)
		}
	}
}
