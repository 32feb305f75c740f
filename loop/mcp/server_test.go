package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/mcp"
)

func toolByName(t *testing.T, s *mcp.Server, name string) loop.Tool {
	t.Helper()
	for _, tl := range s.Tools() {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("server %s has no tool %s", s.Name(), name)
	return nil
}

func call(t *testing.T, s *mcp.Server, name, args string) (string, error) {
	t.Helper()
	return toolByName(t, s, "mcp__files__"+name).Call(ctxT(t), json.RawMessage(args))
}

func mustCall(t *testing.T, s *mcp.Server, name, args string) string {
	t.Helper()
	out, err := call(t, s, name, args)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return out
}

// wantError checks that err is an *mcp.Error of kind naming the server
// and the tool.
func wantError(t *testing.T, err, kind error, tool string) *mcp.Error {
	t.Helper()
	var e *mcp.Error
	if !errors.As(err, &e) || !errors.Is(err, kind) {
		t.Fatalf("error %v (%T), want an *mcp.Error of kind %v", err, err, kind)
	}
	if e.Server != "files" || e.Tool != tool || !strings.Contains(err.Error(), "mcp server files, tool "+tool+": ") {
		t.Fatalf("error %q does not name server files and tool %s", err, tool)
	}
	return e
}

func TestToolsAreListedWithNamesSchemasAndIdempotency(t *testing.T) {
	transports(t, func(t *testing.T, cfg mcp.ServerConfig, _ string) {
		s := connect(t, cfg)
		var names []string
		idem := map[string]bool{}
		for _, tl := range s.Tools() {
			sp := tl.Spec()
			names = append(names, sp.Name)
			idem[sp.Name] = sp.Idempotent
			var schema struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(sp.Parameters, &schema); err != nil || schema.Type != "object" {
				t.Errorf("%s parameters %s: %v", sp.Name, sp.Parameters, err)
			}
		}
		slices.Sort(names)
		want := []string{"delete_file", "echo", "env", "fail", "media", "pid", "put", "sleep", "spawn"}
		for i := range want {
			want[i] = "mcp__files__" + want[i]
		}
		if !slices.Equal(names, want) {
			t.Fatalf("tools (listed 3 a page):\n got %v\nwant %v", names, want)
		}
		if sk := s.Skipped(); len(sk) != 1 || sk[0].Name != "bad.name" || sk[0].Reason == "" {
			t.Fatalf("skipped = %+v", sk)
		}
		for name, want := range map[string]bool{"echo": true, "pid": true, "put": true, "delete_file": false, "fail": false, "sleep": false} {
			if got := idem["mcp__files__"+name]; got != want {
				t.Errorf("%s idempotent = %v, want %v", name, got, want)
			}
		}
		echo := toolByName(t, s, "mcp__files__echo").Spec()
		var schema struct {
			Properties map[string]struct {
				Type        string `json:"type"`
				Description string `json:"description"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(echo.Parameters, &schema); err != nil {
			t.Fatal(err)
		}
		if p := schema.Properties["text"]; p.Type != "string" || p.Description != "the text to echo" || !slices.Equal(schema.Required, []string{"text"}) {
			t.Fatalf("echo schema %s", echo.Parameters)
		}
		if echo.Description != "Echoes text." {
			t.Fatalf("echo description %q", echo.Description)
		}
	})
}

func TestCallReturnsTheTextAndDescribesOtherContent(t *testing.T) {
	transports(t, func(t *testing.T, cfg mcp.ServerConfig, _ string) {
		s := connect(t, cfg)
		if out := mustCall(t, s, "echo", `{"text":"hi"}`); out != "echo: hi" {
			t.Fatalf("echo = %q", out)
		}
		if out := mustCall(t, s, "put", `{"Key":"k","Value":"v"}`); out != "stored k" {
			t.Fatalf("put = %q", out)
		}
		want := "here\n[image: image/png, 1234 bytes]\n[resource link: file:///a.txt (a.txt)]\n[resource: file:///b.txt, text/plain]\nbee"
		for _, args := range []string{`{}`, ``, `null`} { // no arguments is {}
			if out := mustCall(t, s, "media", args); out != want {
				t.Fatalf("media(%s) = %q, want %q", args, out, want)
			}
		}
	})
}

func TestErrorsNameTheServerAndTheTool(t *testing.T) {
	transports(t, func(t *testing.T, cfg mcp.ServerConfig, _ string) {
		s := connect(t, cfg)
		_, err := call(t, s, "fail", `{}`)
		wantError(t, err, mcp.ErrToolError, "fail")
		if !strings.HasSuffix(err.Error(), ": tool returned an error: disk full") {
			t.Fatalf("isError result: %q", err)
		}
		_, err = call(t, s, "echo", `[1,2]`)
		wantError(t, err, mcp.ErrArguments, "echo")
		// Arguments the server's schema refuses: a JSON-RPC error, and the
		// session stays.
		_, err = call(t, s, "echo", `{"text":7}`)
		if !errors.Is(err, mcp.ErrProtocol) && !errors.Is(err, mcp.ErrToolError) {
			t.Fatalf("bad arguments: %v", err)
		}
		if out := mustCall(t, s, "echo", `{"text":"still here"}`); out != "echo: still here" {
			t.Fatalf("after the error: %q", out)
		}
	})
}

func TestACallThatExceedsItsTimeoutFailsAndTheNextReconnects(t *testing.T) {
	transports(t, func(t *testing.T, cfg mcp.ServerConfig, _ string) {
		cfg.Timeout = 2 * time.Second
		s := connect(t, cfg)
		before := mustCall(t, s, "pid", `{}`)
		_, err := call(t, s, "sleep", `{"ms":600000}`)
		e := wantError(t, err, mcp.ErrTimeout, "sleep")
		if !strings.Contains(e.Error(), "no result within 2s") {
			t.Fatalf("timeout error %q", e)
		}
		after := mustCall(t, s, "pid", `{}`)
		if cfg.Command != "" && after == before {
			t.Fatalf("the timed-out stdio server (pid %s) was not replaced", before)
		}
	})
}

func TestConcurrentCalls(t *testing.T) {
	transports(t, func(t *testing.T, cfg mcp.ServerConfig, _ string) {
		s := connect(t, cfg)
		echo := toolByName(t, s, "mcp__files__echo")
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for i := range errs {
			wg.Go(func() {
				out, err := echo.Call(ctxT(t), json.RawMessage(`{"text":"`+strconv.Itoa(i)+`"}`))
				if err == nil && out != "echo: "+strconv.Itoa(i) {
					err = errors.New("wrong answer " + out)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCallAfterCloseFails(t *testing.T) {
	transports(t, func(t *testing.T, cfg mcp.ServerConfig, _ string) {
		s := connect(t, cfg)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		_, err := call(t, s, "echo", `{"text":"x"}`)
		wantError(t, err, mcp.ErrClosed, "echo")
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

func pidOf(t *testing.T, s string) int {
	t.Helper()
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 1 {
		t.Fatalf("pid %q", s)
	}
	return pid
}

func TestServerThatFailsToStart(t *testing.T) {
	hanging := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client leave
		<-r.Context().Done()
	}))
	t.Cleanup(hanging.Close)
	for name, cfg := range map[string]mcp.ServerConfig{
		"missing command": {Name: "files", Command: "/nonexistent/hookbus-mcp-server"},
		"not in PATH":     {Name: "files", Command: "hookbus-no-such-mcp-server"},
		"exits at once":   {Name: "files", Command: "sh", Args: []string{"-c", "echo boom: no config >&2; exit 3"}},
		"not MCP":         {Name: "files", Command: "sh", Args: []string{"-c", "echo hello; echo garbage >&2"}},
		"never answers":   {Name: "files", Command: "sleep", Args: []string{"600"}, Timeout: 500 * time.Millisecond},
		"nobody listens":  {Name: "files", URL: "http://127.0.0.1:1/mcp"},
		"hangs":           {Name: "files", URL: hanging.URL, Timeout: 500 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := mcp.Connect(ctxT(t), cfg)
			var e *mcp.Error
			if !errors.As(err, &e) || !errors.Is(err, mcp.ErrStart) || e.Server != "files" || !strings.HasPrefix(err.Error(), "mcp server files: cannot start or reach the server: ") {
				t.Fatalf("Connect = %v", err)
			}
			if name == "exits at once" && e.Stderr != "boom: no config" {
				t.Fatalf("stderr %q in %v", e.Stderr, err)
			}
			if cfg.Timeout > 0 && !strings.HasSuffix(err.Error(), "no answer within 500ms") {
				t.Fatalf("timeout: %v", err)
			}
		})
	}
}

func TestACallerThatGivesUpKeepsTheSession(t *testing.T) {
	dir := t.TempDir()
	s := connect(t, stdioConfig(t, "files", dir))
	pid := mustCall(t, s, "pid", `{}`)
	ctx, cancel := context.WithCancel(ctxT(t))
	errc := make(chan error, 1)
	go func() {
		_, err := toolByName(t, s, "mcp__files__sleep").Call(ctx, json.RawMessage(`{"ms":600000}`))
		errc <- err
	}()
	bustest.Eventuallyf(t, 20*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dir, "sleeping"))
		return err == nil
	}, "the sleep call never reached the server")
	cancel()
	wantError(t, <-errc, context.Canceled, "sleep")
	if again := mustCall(t, s, "pid", `{}`); again != pid {
		t.Fatalf("the server was replaced (pid %s, then %s)", pid, again)
	}

	gone, stop := context.WithCancel(context.Background())
	stop()
	if _, err := mcp.Connect(gone, stdioConfig(t, "files", "")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Connect with an ended context: %v", err)
	}
}
