package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/loop/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary is also the stdio MCP server of the tests: started with
// serverEnv=1 it serves testServer on its stdin and stdout.
const (
	serverEnv = "HOOKBUS_MCP_TEST_SERVER"
	dirEnv    = "HOOKBUS_MCP_TEST_DIR" // where the server leaves marker files
	testToken = "Bearer t0ken"
)

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		srv := testServer(nil, os.Getenv(dirEnv), nil)
		if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// recorder counts the calls of each tool an in-process server ran.
type recorder struct {
	mu    sync.Mutex
	calls map[string]int
}

func (r *recorder) add(tool string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	r.calls[tool]++
}

func (r *recorder) count(tool string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[tool]
}

type (
	textArgs struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	putArgs  struct{ Key, Value string }
	pathArgs struct {
		Path string `json:"path"`
	}
	sleepArgs struct {
		MS int `json:"ms"`
	}
	nameArgs struct {
		Name string `json:"name"`
	}
	noArgs struct{}
)

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// testServer is the MCP server of the tests (stdio and HTTP alike): nine
// tools listed three a page, one of them with a name a model would refuse.
// dir, when set, receives a marker file "sleeping" when sleep starts; sleep
// also ends when quit closes (an HTTP server being stopped).
func testServer(rec *recorder, dir string, quit <-chan struct{}) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "testserver", Version: "v0.0.1"}, &sdk.ServerOptions{PageSize: 3})
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true}
	yes := true
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echoes text.", Annotations: readOnly},
		func(_ context.Context, _ *sdk.CallToolRequest, in textArgs) (*sdk.CallToolResult, any, error) {
			rec.add("echo")
			return text("echo: " + in.Text), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "put", Annotations: &sdk.ToolAnnotations{IdempotentHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in putArgs) (*sdk.CallToolResult, any, error) {
			rec.add("put")
			return text("stored " + in.Key), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "delete_file", Annotations: &sdk.ToolAnnotations{DestructiveHint: &yes}},
		func(_ context.Context, _ *sdk.CallToolRequest, in pathArgs) (*sdk.CallToolResult, any, error) {
			rec.add("delete_file")
			return text("deleted " + in.Path), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail"},
		func(context.Context, *sdk.CallToolRequest, noArgs) (*sdk.CallToolResult, any, error) {
			rec.add("fail")
			return nil, nil, errors.New("disk full")
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "sleep"},
		func(ctx context.Context, _ *sdk.CallToolRequest, in sleepArgs) (*sdk.CallToolResult, any, error) {
			rec.add("sleep")
			if dir != "" {
				if err := os.WriteFile(filepath.Join(dir, "sleeping"), nil, 0o600); err != nil {
					return nil, nil, err
				}
			}
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-quit:
				return nil, nil, errors.New("server stopping")
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
				return text("slept"), nil, nil
			}
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "pid", Annotations: readOnly},
		func(context.Context, *sdk.CallToolRequest, noArgs) (*sdk.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "env", Annotations: readOnly},
		func(_ context.Context, _ *sdk.CallToolRequest, in nameArgs) (*sdk.CallToolResult, any, error) {
			return text(os.Getenv(in.Name)), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "spawn"},
		func(context.Context, *sdk.CallToolRequest, noArgs) (*sdk.CallToolResult, any, error) {
			cmd := exec.Command("sleep", "1000")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			go func() { _ = cmd.Wait() }()
			return text(strconv.Itoa(cmd.Process.Pid)), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "media"},
		func(context.Context, *sdk.CallToolRequest, noArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "here"},
				&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)},
				&sdk.ResourceLink{URI: "file:///a.txt", Name: "a.txt"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b.txt", MIMEType: "text/plain", Text: "bee"}},
			}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "bad.name"},
		func(context.Context, *sdk.CallToolRequest, noArgs) (*sdk.CallToolResult, any, error) {
			return text("unreachable"), nil, nil
		})
	return srv
}

// stdioConfig runs the test binary as a stdio server named name; dir
// receives its marker files.
func stdioConfig(t *testing.T, name, dir string) mcp.ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return mcp.ServerConfig{Name: name, Command: exe, Env: map[string]string{serverEnv: "1", dirEnv: dir}, Timeout: 20 * time.Second}
}

// httpServer is an in-process streamable HTTP MCP server that can be
// stopped and started again on the same address (a restarted server
// process: its sessions are gone).
type httpServer struct {
	t    *testing.T
	addr string
	rec  *recorder
	dir  string
	mu   sync.Mutex
	web  *httptest.Server
	srv  *sdk.Server
	quit chan struct{} // closed when web stops
	// handshakes counts the sessions clients opened: the client starts each
	// with server/discover (then falls back to initialize: this server
	// speaks 2025-11-25).
	handshakes atomic.Int32
}

func startHTTP(t *testing.T, rec *recorder, dir string) *httpServer {
	t.Helper()
	h := &httpServer{t: t, rec: rec, dir: dir}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	h.serve(ln)
	t.Cleanup(h.stop)
	return h
}

func (h *httpServer) serve(ln net.Listener) {
	quit := make(chan struct{})
	srv := testServer(h.rec, h.dir, quit)
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	web := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != testToken {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if bytes.Contains(body, []byte(`"method":"server/discover"`)) {
				h.handshakes.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	web.Listener.Close()
	web.Listener = ln
	web.Start()
	h.mu.Lock()
	h.web, h.srv, h.quit = web, srv, quit
	h.mu.Unlock()
}

func (h *httpServer) stop() {
	h.mu.Lock()
	web, quit := h.web, h.quit
	h.web, h.quit = nil, nil
	h.mu.Unlock()
	if web != nil {
		close(quit)
		web.CloseClientConnections()
		web.Close()
	}
}

// server is the MCP server being served.
func (h *httpServer) server() *sdk.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.srv
}

// restart serves a fresh server on the old address.
func (h *httpServer) restart() {
	h.t.Helper()
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		h.t.Fatalf("listen again on %s: %v", h.addr, err)
	}
	h.serve(ln)
}

func (h *httpServer) config(name string) mcp.ServerConfig {
	return mcp.ServerConfig{Name: name, URL: "http://" + h.addr + "/mcp", Headers: map[string]string{"Authorization": testToken}, Timeout: 20 * time.Second}
}

// connect connects to cfg and closes the server at the end of the test.
func connect(t *testing.T, cfg mcp.ServerConfig) *mcp.Server {
	t.Helper()
	s, err := mcp.Connect(ctxT(t), cfg)
	if err != nil {
		t.Fatalf("Connect(%s): %v", cfg.Name, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// transports runs fn once per transport, against a fresh server named
// "files" (rec counts the HTTP server's calls).
func transports(t *testing.T, fn func(t *testing.T, cfg mcp.ServerConfig, dir string)) {
	t.Run("stdio", func(t *testing.T) {
		dir := t.TempDir()
		fn(t, stdioConfig(t, "files", dir), dir)
	})
	t.Run("http", func(t *testing.T) {
		dir := t.TempDir()
		fn(t, startHTTP(t, &recorder{}, dir).config("files"), dir)
	})
}
