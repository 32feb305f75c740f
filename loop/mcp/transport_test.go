package mcp_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/loop/mcp"
)

func TestHTTPServerStoppedThenBack(t *testing.T) {
	rec := &recorder{}
	h := startHTTP(t, rec, "")
	s := connect(t, h.config("files"))
	if out := mustCall(t, s, "echo", `{"text":"one"}`); out != "echo: one" {
		t.Fatalf("echo = %q", out)
	}
	h.stop()
	_, err := call(t, s, "echo", `{"text":"two"}`)
	wantError(t, err, mcp.ErrConnectionLost, "echo")
	// While it is down, each call tries to reconnect and says it cannot.
	_, err = call(t, s, "echo", `{"text":"three"}`)
	wantError(t, err, mcp.ErrStart, "echo")
	h.restart() // a new server process: the old session is gone
	if out := mustCall(t, s, "echo", `{"text":"four"}`); out != "echo: four" {
		t.Fatalf("echo after the restart = %q", out)
	}
	if n := rec.count("echo"); n != 2 {
		t.Fatalf("the server ran echo %d times, want 2", n)
	}
	if n := h.handshakes.Load(); n != 2 {
		t.Fatalf("%d handshakes, want 2 (one before the stop, one after)", n)
	}
}

// A server that restarted between two calls forgot the session: it
// answers 404 without running the call, so the call is sent again on a new
// session and the model never sees the restart.
func TestHTTPServerRestartedBetweenCallsIsTransparent(t *testing.T) {
	rec := &recorder{}
	h := startHTTP(t, rec, "")
	s := connect(t, h.config("files"))
	mustCall(t, s, "echo", `{"text":"one"}`)
	h.stop()
	h.restart()
	if out := mustCall(t, s, "echo", `{"text":"two"}`); out != "echo: two" {
		t.Fatalf("echo after the restart = %q", out)
	}
	// Each call ran once. Whether the second needed a new handshake
	// depends on the protocol version negotiated: a stateless server
	// (server/discover) has no session to forget.
	if n, hs := rec.count("echo"), h.handshakes.Load(); n != 2 || hs < 1 || hs > 2 {
		t.Fatalf("echo ran %d times over %d handshakes, want 2 over 1 or 2", n, hs)
	}
}

func TestAJSONRPCErrorIsAProtocolErrorAndKeepsTheSession(t *testing.T) {
	rec := &recorder{}
	h := startHTTP(t, rec, "")
	s := connect(t, h.config("files"))
	h.server().RemoveTools("echo") // the tool the agent was given is gone
	_, err := call(t, s, "echo", `{"text":"x"}`)
	wantError(t, err, mcp.ErrProtocol, "echo")
	if !strings.Contains(err.Error(), "echo") || errors.Is(err, mcp.ErrConnectionLost) {
		t.Fatalf("unknown tool: %v", err)
	}
	if out := mustCall(t, s, "put", `{"Key":"k","Value":"v"}`); out != "stored k" {
		t.Fatalf("put after the error = %q", out)
	}
	if n := h.handshakes.Load(); n != 1 {
		t.Fatalf("%d handshakes: the session was not kept", n)
	}
}

func TestHTTPHeadersAreSent(t *testing.T) {
	h := startHTTP(t, &recorder{}, "")
	cfg := h.config("files")
	cfg.Headers = nil
	_, err := mcp.Connect(ctxT(t), cfg)
	if !errors.Is(err, mcp.ErrStart) || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("Connect without the token: %v", err)
	}
	s := connect(t, h.config("files"))
	if out := mustCall(t, s, "echo", `{"text":"in"}`); out != "echo: in" {
		t.Fatalf("echo = %q", out)
	}
}

func TestStdioServerGetsOnlyItsOwnEnvironment(t *testing.T) {
	t.Setenv("HOOKBUS_TEST_SECRET", "s3cret")
	cfg := stdioConfig(t, "files", "")
	cfg.Env["GREETING"] = "hello"
	s := connect(t, cfg)
	for name, want := range map[string]string{
		"GREETING":            "hello",
		"HOOKBUS_TEST_SECRET": "",
		"PATH":                os.Getenv("PATH"),
	} {
		if got := mustCall(t, s, "env", `{"name":"`+name+`"}`); got != want {
			t.Errorf("the server sees %s=%q, want %q", name, got, want)
		}
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

func TestCloseStopsTheServerAndWhatItStarted(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	s := connect(t, stdioConfig(t, "files", ""))
	server := pidOf(t, mustCall(t, s, "pid", `{}`))
	child := pidOf(t, mustCall(t, s, "spawn", `{}`))
	if !alive(t, server) || !alive(t, child) {
		t.Fatal("the server or its child is not running")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(t, server) {
		t.Fatalf("server %d still runs after Close", server)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return !alive(t, child) },
		"the server's child %d still runs after Close", child)
}

func TestConnectAll(t *testing.T) {
	h := startHTTP(t, &recorder{}, "")
	web := h.config("web")
	local := stdioConfig(t, "local", "")
	ss, err := mcp.ConnectAll(ctxT(t), []mcp.ServerConfig{local, web})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	tools := ss.Tools()
	if len(tools) != 18 || tools[0].Spec().Name[:12] != "mcp__local__" || tools[17].Spec().Name[:10] != "mcp__web__" {
		t.Fatalf("%d tools, first %s, last %s", len(tools), tools[0].Spec().Name, tools[len(tools)-1].Spec().Name)
	}

	if _, err := mcp.ConnectAll(ctxT(t), []mcp.ServerConfig{web, web}); !errors.Is(err, mcp.ErrInvalidConfig) {
		t.Fatalf("two servers named web: %v", err)
	}
	bad := mcp.ServerConfig{Name: "broken", Command: "/nonexistent/server"}
	_, err = mcp.ConnectAll(ctxT(t), []mcp.ServerConfig{local, bad})
	var e *mcp.Error
	if !errors.As(err, &e) || e.Server != "broken" || !errors.Is(err, mcp.ErrStart) {
		t.Fatalf("ConnectAll with a broken server: %v", err)
	}
}

func TestCommandIsFoundAsTheServerWouldFindIt(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "hookbus-test-mcp-server")); err != nil {
		t.Fatal(err)
	}
	// A bare name is looked up in the server's own PATH.
	cfg := stdioConfig(t, "files", "")
	cfg.Command = "hookbus-test-mcp-server"
	cfg.Env["PATH"] = bin
	s := connect(t, cfg)
	if got := mustCall(t, s, "env", `{"name":"PATH"}`); got != bin {
		t.Fatalf("the server's PATH is %q", got)
	}
	// A relative path is relative to the server's directory.
	cfg = stdioConfig(t, "files", "")
	cfg.Command, cfg.Dir = "./hookbus-test-mcp-server", bin
	connect(t, cfg)
}
