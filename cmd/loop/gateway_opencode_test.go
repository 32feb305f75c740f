package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/opencode"
	"github.com/hookbus/hookbus/interceptors"
)

// startBusWithKindGuard is startBusWithGuard with denyRm registered for
// calls of the shell kind, whatever the tool's name.
func startBusWithKindGuard(t *testing.T) (string, *bus.Bus) {
	t.Helper()
	srv, nc := bustest.Start(t, bustest.WithListener())
	b := bustest.Provision(t, nc)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := remote.NewRegistry(b).Put(ctx, interceptors.Registration{Plugin: "guard", Stage: events.StageToolBefore, Kinds: "shell"}); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Serve(ctx, nc, remote.ServeConfig{Plugin: "guard", Stages: []events.Stage{events.StageToolBefore}}, interceptors.Func(denyRm)); err != nil {
		t.Fatal(err)
	}
	return srv.ClientURL(), b
}

// OpenCode's and Kilo Code's plugin posts to /opencode and /kilo-code: a
// deny is the plugin's block, the session recorded under the route's
// agent.
func TestGatewayOpenCode(t *testing.T) {
	_, b := startBusWithKindGuard(t)
	f := bridgeFlags{policy: "ignore", timeout: bridge.DefaultTimeout}
	hooks, stop, err := syncHooks(t.Context(), b, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	gw, err := newGateway(f.config(b, hooks, nil), defaultBodyLimits(), opencode.OpenCode, opencode.Kilo)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw.handler())
	defer srv.Close()
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, route := range []struct{ path, agent string }{{"/opencode", "opencode"}, {"/kilo-code", "kilo-code"}} {
		rm := hookInput("ses_1", "PreToolUse", `, "tool_name": "bash", "tool_use_id": "call_1", "tool_input": {"command": "rm -rf victim"}`)
		if code, body := post(route.path, rm); code != http.StatusOK || body != `{"block":"no rm -rf here"}` {
			t.Fatalf("%s deny: %d %s", route.path, code, body)
		}
		ls := hookInput("ses_1", "PreToolUse", `, "tool_name": "bash", "tool_use_id": "call_2", "tool_input": {"command": "ls"}`)
		if code, body := post(route.path, ls); code != http.StatusOK || body != "" {
			t.Fatalf("%s allow: %d %q", route.path, code, body)
		}
		code, body := post(route.path, hookInput("ses_1", "Notification", ""))
		var refused struct{ Error string }
		if code != http.StatusBadRequest || json.Unmarshal([]byte(body), &refused) != nil || !strings.Contains(refused.Error, `posts no "Notification"`) {
			t.Fatalf("%s bad input: %d %s", route.path, code, body)
		}
		evs, err := b.SessionEvents(t.Context(), route.agent, "ses_1")
		if err != nil || len(evs) != 5 { // run.started, then hook.decided and tool.before twice
			t.Fatalf("%s session: %d events, %v", route.path, len(evs), err)
		}
	}
}
