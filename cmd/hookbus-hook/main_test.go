package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runWith(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, func(k string) string { return env[k] }, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// The hook input goes to the gateway as sent, with the token; a 200's
// body is printed; any other status is the policy's answer, naming it.
func TestRun(t *testing.T) {
	var got struct {
		path, auth, ctype string
		body              []byte
		proto             string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path, got.auth, got.ctype, got.proto = r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Proto
		got.body, _ = io.ReadAll(r.Body)
		switch r.Header.Get("Authorization") {
		case "Bearer good":
			_, _ = w.Write([]byte(`{"decision":"deny","reason":"no"}`))
		default:
			http.Error(w, "not signed in", http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("good\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := `{"hook_event_name":"BeforeTool","session_id":"s"}`

	code, stdout, stderr := runWith(t, map[string]string{"HOOKBUS_GATEWAY_URL": srv.URL + "/gemini-cli/alice", "HOOKBUS_GATEWAY_TOKEN": "good"}, in)
	if code != 0 || stdout != `{"decision":"deny","reason":"no"}`+"\n" || stderr != "" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if got.path != "/gemini-cli/alice" || got.auth != "Bearer good" || got.ctype != "application/json" || string(got.body) != in || got.proto != "HTTP/1.0" {
		t.Fatalf("the gateway got %+v", got)
	}
	if code, _, _ := runWith(t, nil, in, "--token-file", tokenFile, srv.URL+"/codex-cli"); code != 0 || got.auth != "Bearer good" {
		t.Fatalf("--token-file: exit %d, auth %q", code, got.auth)
	}
	for _, tc := range []struct {
		policy string
		code   int
	}{{"ignore", 1}, {"fail", 2}} {
		code, stdout, stderr := runWith(t, map[string]string{"HOOKBUS_GATEWAY_TOKEN": "bad"}, in, "--policy", tc.policy, srv.URL+"/codex-cli")
		if code != tc.code || stdout != "" || !strings.Contains(stderr, "answered 401 Unauthorized: not signed in") {
			t.Errorf("--policy %s, refused: exit %d stdout %q stderr %q", tc.policy, code, stdout, stderr)
		}
	}
}

// A command line that cannot be meant is exit 2, named.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, nil, "give the gateway's URL"},
		{nil, []string{"https://gw.example.com/codex-cli"}, "not an http:// URL"},
		{nil, []string{"--policy", "maybe", "http://127.0.0.1:1/x"}, `--policy "maybe"`},
		{nil, []string{"--timeout", "0s", "http://127.0.0.1:1/x"}, "--timeout 0s"},
		{nil, []string{"--token-file", "/nonexistent/token", "http://127.0.0.1:1/x"}, "--token-file"},
		{nil, []string{"http://a/x", "http://b/y"}, "one URL"},
		{nil, []string{"--bogus"}, "flag provided but not defined"},
	} {
		code, _, stderr := runWith(t, tc.env, "{}", tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// The gateway is reached by address (IPv4 and IPv6) and by name; one that
// takes the connection and never answers is the policy's answer once
// --timeout has passed, and one that closes without an answer is named.
func TestConnect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	in := `{"hook_event_name":"BeforeTool","session_id":"s"}`
	urls := []string{srv.URL + "/gemini-cli", "http://localhost:" + port + "/gemini-cli"}
	if ln6, err := net.Listen("tcp", "[::1]:0"); err == nil {
		srv6 := httptest.NewUnstartedServer(srv.Config.Handler)
		srv6.Listener = ln6
		srv6.Start()
		defer srv6.Close()
		urls = append(urls, srv6.URL+"/gemini-cli")
	}
	for _, u := range urls {
		if code, stdout, stderr := runWith(t, nil, in, u); code != 0 || stdout != in+"\n" {
			t.Errorf("%s: exit %d stdout %q stderr %q", u, code, stdout, stderr)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(conns)
				return
			}
			conns <- c
		}
	}()
	silent := "http://" + ln.Addr().String() + "/codex-cli"
	code, stdout, stderr := runWith(t, nil, in, "--policy", "fail", "--timeout", "200ms", silent)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "fail closed") || !strings.Contains(stderr, "timeout") {
		t.Errorf("a gateway that does not answer: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	(<-conns).Close()
	go func() {
		c := <-conns
		var req []byte
		for buf := make([]byte, 4096); !bytes.HasSuffix(req, []byte(in)); {
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			req = append(req, buf[:n]...)
		}
		c.Close()
	}()
	code, _, stderr = runWith(t, nil, in, silent)
	if code != 1 || !strings.Contains(stderr, "answered no HTTP response") || !strings.Contains(stderr, "proceeds unchecked") {
		t.Errorf("a gateway that closes without an answer: exit %d stderr %q", code, stderr)
	}
}

// The answer ends where its Content-Length says, the connection open or
// not; without one, it ends with the connection.
func TestAnswerLength(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	url := "http://" + ln.Addr().String() + "/gemini-cli"
	in := `{"hook_event_name":"BeforeTool","session_id":"s"}`
	for _, tc := range []struct {
		answer string
		close  bool
		want   string
	}{
		{"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\ncontent-length: 18\r\n\r\n" + `{"decision":"deny"}`[:18], false, `{"decision":"deny"`},
		{"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", false, "{}"},
		{"HTTP/1.0 200 OK\r\n\r\n{\"a\":1}", true, `{"a":1}`},
	} {
		held := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				held <- nil
				return
			}
			var req []byte
			for buf := make([]byte, 4096); !bytes.HasSuffix(req, []byte(in)); {
				n, err := c.Read(buf)
				if err != nil {
					break
				}
				req = append(req, buf[:n]...)
			}
			_, _ = io.WriteString(c, tc.answer)
			if tc.close {
				c.Close()
			}
			held <- c
		}()
		code, stdout, stderr := runWith(t, nil, in, "--timeout", "5s", url)
		if code != 0 || stdout != tc.want+"\n" {
			t.Errorf("answer %q: exit %d stdout %q stderr %q", tc.answer, code, stdout, stderr)
		}
		if c := <-held; c != nil {
			c.Close()
		}
	}
}
