package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus/bustest"
)

// gatewayURL matches the line loop gateway prints once it listens.
var gatewayURL = regexp.MustCompile(`https?://[0-9.:\[\]a-z]+/claude-code`)

// startGateway runs loop gateway with args until the test ends and returns
// the URL it takes hooks on.
func startGateway(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bustest.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"gateway"}, args...), strings.NewReader(""), &out, &errOut) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("loop gateway did not stop when its ctx ended")
		}
	})
	bustest.Eventuallyf(t, 30*time.Second, func() bool {
		select {
		case code := <-done:
			done <- code
			return true
		default:
		}
		return gatewayURL.MatchString(errOut.String())
	}, "loop gateway to listen: %s", &errOut)
	u := gatewayURL.FindString(errOut.String())
	if u == "" {
		t.Fatalf("loop gateway stopped: %s", &errOut)
	}
	return u
}

// postHook posts body to url with the bearer token (none when empty).
func postHook(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(out)
}

const gatewayToken = "gw-token-0123456789abcdef0123456789abcdef"

// With HOOKBUS_GATEWAY_TOKEN set, a caller without it writes nothing: a
// forged Stop is refused (401) and the session keeps only what the token's
// holder wrote.
func TestGatewayNeedsToken(t *testing.T) {
	nats, b := startBusWithGuard(t)
	t.Setenv("HOOKBUS_GATEWAY_TOKEN", gatewayToken)
	url := startGateway(t, "--listen", "127.0.0.1:0", "--nats", nats)
	if code, body := postHook(t, url, gatewayToken, hookInput("victim", "UserPromptSubmit", `, "prompt": "hello"`)); code != http.StatusOK {
		t.Fatalf("the token's holder: %d %s", code, body)
	}
	before, err := b.SessionEvents(t.Context(), "claude-code", "victim")
	if err != nil || len(before) == 0 {
		t.Fatalf("the holder's prompt: %d events, %v", len(before), err)
	}
	forged := hookInput("victim", "Stop", `, "stop_hook_active": false, "last_assistant_message": "FORGED ANSWER"`)
	for _, token := range []string{"", "not-the-token-0123456789"} {
		if code, body := postHook(t, url, token, forged); code != http.StatusUnauthorized || !json.Valid([]byte(body)) || !strings.Contains(body, `"error"`) {
			t.Errorf("a forged Stop with token %q: %d %s, want 401", token, code, body)
		}
	}
	after, err := b.SessionEvents(t.Context(), "claude-code", "victim")
	if err != nil || len(after) != len(before) {
		t.Fatalf("the refused Stops wrote %d events (%v)", len(after)-len(before), err)
	}
}

// Without a token the gateway listens on loopback only.
func TestGatewayOpenListenRefused(t *testing.T) {
	nats, _ := startBusWithGuard(t)
	var out, errOut bustest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"gateway", "--listen", "0.0.0.0:0", "--nats", nats}, strings.NewReader(""), &out, &errOut)
	}()
	var code int
	bustest.Eventuallyf(t, 30*time.Second, func() bool {
		select {
		case code = <-done:
			return true
		default:
			return gatewayURL.MatchString(errOut.String())
		}
	}, "loop gateway to stop or listen")
	if gatewayURL.MatchString(errOut.String()) {
		t.Fatalf("loop gateway --listen 0.0.0.0:0 without a token listens: %s", &errOut)
	}
	if code != exitUsage || !strings.Contains(errOut.String(), "0.0.0.0") || !strings.Contains(errOut.String(), "--token-file") {
		t.Fatalf("exit %d %q, want 2 naming the address and --token-file", code, &errOut)
	}
}

// A token bound to agents writes only their sessions: another agent's is
// 403, naming it, and nothing is written there.
func TestGatewayAgentTokens(t *testing.T) {
	nats, b := startBusWithGuard(t)
	aliceTok, bobTok := "alice-0123456789abcdef0123456789abcdef", "bob-0123456789abcdef0123456789abcdef01"
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# gateway callers\n"+aliceTok+" alice agents=claude-alice\n"+bobTok+" bob agents=claude-bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startGateway(t, "--listen", "127.0.0.1:0", "--nats", nats, "--token-file", file)
	if code, body := postHook(t, url+"/claude-bob", bobTok, hookInput("bob-1", "UserPromptSubmit", `, "prompt": "hello"`)); code != http.StatusOK {
		t.Fatalf("bob in his session: %d %s", code, body)
	}
	before, err := b.SessionEvents(t.Context(), "claude-bob", "bob-1")
	if err != nil || len(before) == 0 {
		t.Fatalf("bob's session: %d events, %v", len(before), err)
	}
	forged := hookInput("bob-1", "Stop", `, "stop_hook_active": false, "last_assistant_message": "FORGED ANSWER"`)
	for _, u := range []string{url + "/claude-bob", url} {
		code, body := postHook(t, u, aliceTok, forged)
		agent := "claude-bob"
		if u == url {
			agent = "claude-code"
		}
		if code != http.StatusForbidden || !strings.Contains(body, "agent "+agent) || !strings.Contains(body, "alice") || !json.Valid([]byte(body)) || !strings.HasPrefix(body, `{"error":`) {
			t.Errorf("alice's Stop to %s: %d %s, want 403 naming alice and agent %s", u, code, body, agent)
		}
	}
	after, err := b.SessionEvents(t.Context(), "claude-bob", "bob-1")
	if err != nil || len(after) != len(before) {
		t.Fatalf("alice's refused Stop wrote %d events in bob's session (%v)", len(after)-len(before), err)
	}
	if code, body := postHook(t, url+"/claude-alice", aliceTok, hookInput("alice-1", "PreToolUse", rmInput)); code != http.StatusOK || !strings.Contains(body, "no rm -rf here") {
		t.Fatalf("alice in her own agent: %d %s", code, body)
	}
	if evs, err := b.SessionEvents(t.Context(), "claude-alice", "alice-1"); err != nil || len(evs) == 0 {
		t.Fatalf("alice's event not recorded: %d, %v", len(evs), err)
	}
	if code, body := postHook(t, url+"/bad.agent", aliceTok, forged); code != http.StatusBadRequest {
		t.Fatalf("a bad agent id: %d %s", code, body)
	}
}

// Bodies are bounded each (413 without reading, 411 without a length)
// and in total across requests, counted as their bytes arrive: a slow
// body holds what it sent, not what it declared; with the budget held by
// bytes that came, another request is 503 with Retry-After.
func TestGatewayBodyBounds(t *testing.T) {
	_, b := startBusWithGuard(t)
	f := bridgeFlags{agent: bridge.DefaultAgent, policy: "ignore", timeout: bridge.DefaultTimeout}
	limits := defaultBodyLimits()
	limits.max, limits.perCaller, limits.total = 64<<10, 128<<10, 128<<10
	gw, err := newGateway(f.config(b, nil, nil), limits)
	if err != nil {
		t.Fatal(err)
	}
	held := func() int64 { all, _ := gw.budget.Held(""); return all }
	srv := httptest.NewServer(gw.handler())
	defer srv.Close()
	do := func(body io.Reader, length int64) (*http.Response, error) {
		req, _ := http.NewRequest("POST", srv.URL+GatewayPath, body)
		req.ContentLength = length
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res, nil
	}
	send := func(body io.Reader, length int64) *http.Response {
		t.Helper()
		res, err := do(body, length)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := send(strings.NewReader(strings.Repeat(" ", 64<<10+1)), 64<<10+1); res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over --max-body: %d", res.StatusCode)
	}
	if res := send(io.MultiReader(strings.NewReader("{}")), -1); res.StatusCode != http.StatusLengthRequired {
		t.Fatalf("a body of unknown length: %d", res.StatusCode)
	}
	input := func(session string) string {
		s := hookInput(session, "UserPromptSubmit", `, "prompt": "hello"`)
		return s + strings.Repeat(" ", 64<<10-len(s))
	}
	var pipes []*io.PipeWriter
	results := make(chan int, 2)
	for range 2 {
		pr, pw := io.Pipe()
		pipes = append(pipes, pw)
		go func() {
			res, err := do(pr, 64<<10)
			if err != nil {
				results <- 0
				return
			}
			results <- res.StatusCode
		}()
	}
	// Declared, not sent: the two bodies hold what they sent and at most
	// a chunk each, for the read under way.
	if _, err := io.WriteString(pipes[0], "{"); err != nil {
		t.Fatal(err)
	}
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return held() > 0 }, "the first byte to be read")
	if h := held(); h > 2*bodyChunk+1 {
		t.Fatalf("two bodies that sent a byte hold %d bytes, want at most %d", h, 2*bodyChunk+1)
	}
	// Sent all but their last byte: they hold the whole budget.
	bodies := []string{input("slow-0"), input("slow-1")}
	for i, pw := range pipes {
		from := 0
		if i == 0 {
			from = 1
		}
		if _, err := io.WriteString(pw, bodies[i][from:len(bodies[i])-1]); err != nil {
			t.Fatal(err)
		}
	}
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return held() == 128<<10 }, "the two slow bodies to hold the budget (holds %d)", held())
	res := send(strings.NewReader(input("third")[:64]), 64)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a body over the budget: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if h := held(); h != 128<<10 {
		t.Fatalf("the refused body kept budget: %d held", h)
	}
	for i, pw := range pipes {
		if _, err := io.WriteString(pw, bodies[i][len(bodies[i])-1:]); err != nil {
			t.Fatal(err)
		}
		pw.Close()
	}
	for range 2 {
		if code := <-results; code != http.StatusOK {
			t.Fatalf("a slow body: %d", code)
		}
	}
	if h := held(); h != 0 {
		t.Fatalf("%d bytes still held after every request ended", h)
	}
	if res := send(strings.NewReader(input("after")), 64<<10); res.StatusCode != http.StatusOK {
		t.Fatalf("after the budget is free: %d", res.StatusCode)
	}
}
