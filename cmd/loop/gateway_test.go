package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bridge"
)

// loop gateway's handler: Claude Code's http hooks recorded and decided
// as loop claude-hook does.
func TestGateway(t *testing.T) {
	_, b := startBusWithGuard(t)
	f := bridgeFlags{agent: bridge.DefaultAgent, policy: "ignore", timeout: bridge.DefaultTimeout}
	hooks, stop, err := syncHooks(t.Context(), b, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	gw, err := newGateway(f.config(b, hooks, nil), defaultBodyLimits())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw.handler())
	defer srv.Close()
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+GatewayPath, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(hookInput("gw-1", "PreToolUse", rmInput)); code != http.StatusOK || !strings.Contains(body, `"permissionDecision":"deny"`) || !strings.Contains(body, "no rm -rf here") {
		t.Fatalf("deny: %d %s", code, body)
	}
	if code, body := post(hookInput("gw-1", "PreToolUse", `, "tool_name": "Bash", "tool_input": {"command": "ls"}`)); code != http.StatusOK || body != "{}" {
		t.Fatalf("allow: %d %s", code, body)
	}
	if code, body := post(`{"hook_event_name": "PreToolUse", "session_id": "gw-1"}`); code != http.StatusBadRequest || !strings.Contains(body, "no tool_name") {
		t.Fatalf("bad input: %d %s", code, body)
	}
	evs, err := b.SessionEvents(t.Context(), bridge.DefaultAgent, "gw-1")
	if err != nil || len(evs) != 5 { // run.started, then hook.decided and tool.before twice
		t.Fatalf("session: %d events, %v", len(evs), err)
	}
}
