package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

var (
	hookClientOnce sync.Once
	hookClientBin  string
	hookClientErr  error
)

// hookClient builds cmd/hookbus-hook once per test binary (without cgo,
// as make build does) and returns its path.
func hookClient(tb testing.TB) string {
	tb.Helper()
	hookClientOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hookbus-hook")
		if err != nil {
			hookClientErr = err
			return
		}
		hookClientBin = filepath.Join(dir, "hookbus-hook")
		// Built as make build builds it: static, loading no libc.
		cmd := exec.Command("go", "build", "-o", hookClientBin, "github.com/hookbus/hookbus/cmd/hookbus-hook")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			hookClientErr = fmt.Errorf("go build ./cmd/hookbus-hook: %v\n%s", err, out)
		}
	})
	if hookClientErr != nil {
		tb.Fatal(hookClientErr)
	}
	return hookClientBin
}

// runHookClient runs hookbus-hook with stdin and returns its exit status,
// stdout and stderr.
func runHookClient(tb testing.TB, bin, stdin string, args ...string) (int, string, string) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{}
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		tb.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// gatewayServer serves loop gateway's handler (Claude Code's route, and
// the others') on b with the registry's interceptors, until the test ends.
func gatewayServer(tb testing.TB, b *bus.Bus, hooks *interceptors.Chain) *httptest.Server {
	tb.Helper()
	f := bridgeFlags{agent: bridge.DefaultAgent, policy: "ignore", timeout: bridge.DefaultTimeout}
	gw, err := newGateway(f.config(b, hooks, nil), defaultBodyLimits())
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(gw.handler())
	tb.Cleanup(srv.Close)
	return srv
}

// hookbus-hook, the small command hook, posts the hook input to a real
// loop gateway on the embedded server and prints its answer: the guard's
// deny, the event recorded. With the gateway down or refusing the input,
// --policy answers: ignore exits 1 (the agent goes on), fail exits 2 (the
// call is blocked), the cause on stderr.
func TestHookClient(t *testing.T) {
	bin := hookClient(t)
	_, b := startBusWithGuard(t)
	hooks, stop, err := syncHooks(t.Context(), b, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	srv := gatewayServer(t, b, hooks)
	route := srv.URL + GatewayPath

	code, stdout, stderr := runHookClient(t, bin, hookInput("hc-1", "PreToolUse", rmInput), route)
	if code != 0 || !strings.Contains(stdout, `"permissionDecision":"deny"`) || !strings.Contains(stdout, "no rm -rf here") {
		t.Fatalf("deny: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	evs, err := b.SessionEvents(t.Context(), bridge.DefaultAgent, "hc-1")
	if err != nil || len(evs) != 3 { // run.started, tool.before, hook.decided
		t.Fatalf("session: %d events, %v", len(evs), err)
	}

	code, _, stderr = runHookClient(t, bin, `{"hook_event_name": "PreToolUse", "session_id": "hc-1"}`, "--policy", "fail", route)
	if code != 2 || !strings.Contains(stderr, "400 Bad Request") || !strings.Contains(stderr, "no tool_name") {
		t.Fatalf("bad input, fail: exit %d, stderr %s", code, stderr)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + GatewayPath
	ln.Close()
	for _, tc := range []struct {
		policy string
		code   int
		says   string
	}{
		{"ignore", 1, "proceeds unchecked"},
		{"fail", 2, "fail closed"},
	} {
		code, stdout, stderr := runHookClient(t, bin, hookInput("hc-2", "PreToolUse", rmInput), "--policy", tc.policy, down)
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.says) || !strings.Contains(stderr, "did not answer") {
			t.Errorf("gateway down, --policy %s: exit %d (want %d)\nstdout %s\nstderr %s", tc.policy, code, tc.code, stdout, stderr)
		}
	}
	if code, _, stderr := runHookClient(t, bin, "{}", "--policy", "maybe", route); code != 2 || !strings.Contains(stderr, `--policy "maybe"`) {
		t.Errorf("bad --policy: exit %d, stderr %s", code, stderr)
	}
}

// lastReads counts a Store's reads of a session's last event.
type lastReads struct {
	bridge.Store
	n atomic.Int64
}

func (c *lastReads) LastEvent(ctx context.Context, agent, session string, stage events.Stage) (*events.Event, error) {
	c.n.Add(1)
	return c.Store.LastEvent(ctx, agent, session, stage)
}

// Two gateways on one session, its events sent to each in turn, a few at
// a time: each appends the events that follow its own without reading the
// session, an event that follows the other's is fenced off and stored
// after a read, and the session's run verifies whole, every call in it.
func TestGatewaysShareASession(t *testing.T) {
	b := bustest.StartBus(t)
	store := &lastReads{Store: b}
	f := bridgeFlags{agent: bridge.DefaultAgent, policy: "fail", timeout: bridge.DefaultTimeout}
	var urls []string
	for range 2 {
		gw, err := newGateway(f.config(store, nil, nil), defaultBodyLimits())
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(gw.handler())
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL+GatewayPath)
	}
	const s = "two-gateways"
	post := func(url, body string) {
		t.Helper()
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte("hookbus")) {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
	}
	post(urls[0], hookInput(s, "SessionStart", `, "source": "startup"`))
	const calls = 10
	for i := range calls {
		url := urls[i/2%2] // two calls on one gateway, then two on the other
		fields := fmt.Sprintf(`, "tool_name": "Bash", "tool_use_id": "toolu_%d", "tool_input": {"command": "ls"}`, i)
		post(url, hookInput(s, "PreToolUse", fields))
		post(url, hookInput(s, "PostToolUse", fields+`, "tool_response": {"stdout": "a"}`))
	}
	evs, err := b.SessionEvents(t.Context(), bridge.DefaultAgent, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1+2*calls {
		t.Fatalf("%d events, want %d", len(evs), 1+2*calls)
	}
	var v audit.Verifier
	for _, e := range evs {
		v.Add(e)
	}
	for _, vd := range v.Verdicts() {
		if !vd.OK() || vd.Events != len(evs) {
			t.Errorf("run %s: %d events, %+v", vd.RunID, vd.Events, vd.Problems)
		}
	}
	// A read for each gateway's first event of its turn, none for the
	// others.
	if n := store.n.Load(); n > calls {
		t.Errorf("%d reads of the session's last event for %d events", n, 1+2*calls)
	}
}

// BenchmarkHookClient is a command hook's whole cost per event, the
// process's start included: BENCH_HOOK_EVENTS (default 300) PreToolUse
// events, each an exec of hookbus-hook posting to loop gateway's handler
// on the embedded server with the bus recording it, against the same
// events posted by a kept-alive HTTP client (the gateway's own cost, as
// an http hook pays it) and by this process as hookbus-hook posts them,
// one HTTP/1.0 request on a connection of its own (the gateway's cost
// with a connection's, without a process's), and the floor of any command
// hook, an exec of true started as the hook is (its input on a pipe, its
// output read). It reports p50 and p99 of each in µs
// (BENCH_HOOK_BIN measures a hookbus-hook built otherwise;
// BENCH_HOOK_ALT another one, run after each event's hookbus-hook in the
// same loop, so that two builds are compared under the same load):
//
//	go test ./cmd/loop -run '^$' -bench HookClient -benchtime 1x
func BenchmarkHookClient(b *testing.B) {
	n := 300
	if s := os.Getenv("BENCH_HOOK_EVENTS"); s != "" {
		fmt.Sscan(s, &n)
	}
	bin := os.Getenv("BENCH_HOOK_BIN")
	if bin == "" {
		bin = hookClient(b)
	}
	alt := os.Getenv("BENCH_HOOK_ALT")
	for range b.N {
		b.StopTimer()
		bs := bustest.StartBus(b)
		srv := gatewayServer(b, bs, interceptors.NewChain())
		route := srv.URL + GatewayPath
		client := srv.Client()
		const s = "bench-hook"
		input := func(i int) string {
			return hookInput(s, "PreToolUse", fmt.Sprintf(`, "tool_name": "Bash", "tool_use_id": "toolu_%05d", "tool_input": {"command": "ls"}`, i))
		}
		post := func(body string) time.Duration {
			start := time.Now()
			resp, err := client.Post(route, "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte("could not record")) {
				b.Fatalf("%d %s", resp.StatusCode, out)
			}
			return time.Since(start)
		}
		post(hookInput(s, "SessionStart", `, "source": "startup"`))
		// Warm both paths: the page cache holds the binary, the gateway's
		// stream is created.
		for i := range 20 {
			post(input(-1 - i))
			if code, _, stderr := runHookClient(b, bin, input(-100-i), route); code != 0 {
				b.Fatalf("hookbus-hook: exit %d: %s", code, stderr)
			}
		}
		// post10 posts body as hookbus-hook does, one HTTP/1.0 request on
		// a connection of its own, from this process: the gateway's cost
		// with a connection's, without a process's start.
		addr := srv.Listener.Addr().String()
		post10 := func(body string) time.Duration {
			start := time.Now()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			_, err = io.WriteString(c, "POST "+GatewayPath+" HTTP/1.0\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
			if err != nil {
				b.Fatal(err)
			}
			out, err := io.ReadAll(c)
			c.Close()
			if err != nil || !bytes.HasPrefix(out, []byte("HTTP/1.0 200 ")) || bytes.Contains(out, []byte("could not record")) {
				b.Fatalf("%v %s", err, out)
			}
			return time.Since(start)
		}
		gwLat, connLat, hookLat, spawnLat, altLat := make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]time.Duration, 0, n), make([]time.Duration, 0, n)
		spawn, spawnErr := exec.LookPath("true")
		b.StartTimer()
		for i := range n {
			gwLat = append(gwLat, post(input(3*i)))
			connLat = append(connLat, post10(input(3*i+2)))
			if spawnErr == nil {
				// Started as the hook is: its input on a pipe, its output read.
				cmd := exec.Command(spawn)
				cmd.Stdin = strings.NewReader(input(3*i + 1))
				start := time.Now()
				if _, err := cmd.Output(); err != nil {
					b.Fatal(err)
				}
				spawnLat = append(spawnLat, time.Since(start))
			}
			hookLat = append(hookLat, execHook(b, bin, route, input(3*i+1)))
			if alt != "" {
				altLat = append(altLat, execHook(b, alt, route, input(-1000-i)))
			}
		}
		b.StopTimer()
		evs, err := bs.SessionEvents(b.Context(), bridge.DefaultAgent, s)
		if err != nil || len(evs) < 3*n+len(altLat) {
			b.Fatalf("the bus recorded %d events of %d, %v", len(evs), 3*n+len(altLat), err)
		}
		hook, gw, conn := pcts(hookLat), pcts(gwLat), pcts(connLat)
		b.ReportMetric(hook[0], "hook_p50_us")
		b.ReportMetric(hook[1], "hook_p99_us")
		b.ReportMetric(gw[0], "gateway_p50_us")
		b.ReportMetric(gw[1], "gateway_p99_us")
		b.ReportMetric(conn[0], "conn_p50_us")
		b.ReportMetric(conn[1], "conn_p99_us")
		var floor [2]float64
		if len(spawnLat) > 0 {
			floor = pcts(spawnLat)
			b.ReportMetric(floor[0], "spawn_p50_us")
		}
		if len(altLat) > 0 {
			a := pcts(altLat)
			b.ReportMetric(a[0], "alt_p50_us")
			b.ReportMetric(a[1], "alt_p99_us")
			b.Logf("BENCH_HOOK_ALT %s p50 %.0f µs p99 %.0f µs", alt, a[0], a[1])
		}
		st, _ := os.Stat(bin)
		la, _ := os.ReadFile("/proc/loadavg")
		b.Logf("%d events: hookbus-hook (exec, %d bytes) p50 %.0f µs p99 %.0f µs; gateway (http, kept alive) p50 %.0f µs p99 %.0f µs; gateway (HTTP/1.0, a connection each) p50 %.0f µs p99 %.0f µs; the floor, exec of true, p50 %.0f µs p99 %.0f µs; load average %s",
			n, st.Size(), hook[0], hook[1], gw[0], gw[1], conn[0], conn[1], floor[0], floor[1], strings.TrimSpace(string(la)))
	}
}

// execHook runs the hook client bin on input, posting to route, and
// returns how long it took.
func execHook(b *testing.B, bin, route, input string) time.Duration {
	b.Helper()
	cmd := exec.Command(bin, route)
	cmd.Stdin = strings.NewReader(input)
	start := time.Now()
	out, err := cmd.Output()
	d := time.Since(start)
	if err != nil || bytes.Contains(out, []byte("could not record")) {
		b.Fatalf("hookbus-hook %s: %v %s", bin, err, out)
	}
	return d
}
