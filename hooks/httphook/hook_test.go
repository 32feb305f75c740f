package httphook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/httphook"
	"github.com/hookbus/hookbus/interceptors"
)

func toolBefore(t *testing.T) *events.Event {
	t.Helper()
	ev, err := events.New(events.StageToolBefore, events.Meta{Source: "t", AgentID: "coder", SessionID: "s1", RunID: "r1", Subject: "Bash"},
		events.ToolBefore{Call: events.ToolCall{ID: "toolu_1", Name: "Bash", Arguments: json.RawMessage(`{"command":"rm -rf /"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func intercept(t *testing.T, h *httphook.Hook, timeout time.Duration) (*interceptors.Decision, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ev := toolBefore(t)
	return h.Intercept(ctx, &interceptors.Request{Stage: ev.Stage, Event: ev})
}

func TestResponses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		kind    interceptors.Kind
		reason  string
		err     error
		errText string
	}{
		{"2xx empty", 200, "", interceptors.Allow, "", nil, ""},
		{"204", 204, "", interceptors.Allow, "", nil, ""},
		{"2xx text", 200, "fine by me", interceptors.Allow, "", nil, ""},
		{"2xx deny", 200, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy 7"}}`, interceptors.Deny, "policy 7", nil, ""},
		{"2xx block", 200, `{"decision":"block","reason":"old style"}`, interceptors.Deny, "old style", nil, ""},
		{"2xx malformed", 200, `{"decision":`, "", "", interceptors.ErrBadReply, "not Claude Code's JSON output"},
		{"500", 500, "database down", "", "", httphook.ErrStatus, "answered 500 Internal Server Error (Claude Code's non-blocking error): database down"},
		{"403 with a decision is still an error", 403, `{"decision":"block","reason":"x"}`, "", "", httphook.ErrStatus, "403"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			h, err := httphook.New(httphook.Config{}, claudecode.PreToolUse, json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q}`, srv.URL)))
			if err != nil {
				t.Fatal(err)
			}
			d, err := intercept(t, h, 10*time.Second)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error %v; want %v saying %q", err, tc.err, tc.errText)
				}
				if interceptors.FailureKind(err) == "timeout" {
					t.Fatalf("kind timeout for %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d == nil {
				d = &interceptors.Decision{Kind: interceptors.Allow}
			}
			if d.Kind != tc.kind || d.Reason != tc.reason {
				t.Fatalf("decision %+v", d)
			}
		})
	}
}

// The request is Claude Code's input, POSTed as JSON with the handler's
// headers; only allowed variables are read into them.
func TestRequest(t *testing.T) {
	var mu sync.Mutex
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = r
		body, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	env := map[string]string{"HOOK_TOKEN": "t0k3n", "SECRET": "no"}
	h, err := httphook.New(httphook.Config{Cwd: "/root/dir", LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }},
		claudecode.PreToolUse, json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q,"timeout":5,
		"headers":{"Authorization":"Bearer $HOOK_TOKEN","X-Other":"${SECRET}-x"},"allowedEnvVars":["HOOK_TOKEN"]}`, srv.URL+"/hooks/pre")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := intercept(t, h, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got.Method != http.MethodPost || got.URL.Path != "/hooks/pre" || got.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("request %s %s %v", got.Method, got.URL, got.Header)
	}
	if a, o := got.Header.Get("Authorization"), got.Header.Get("X-Other"); a != "Bearer t0k3n" || o != "-x" {
		t.Fatalf("headers Authorization %q X-Other %q", a, o)
	}
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatal(err)
	}
	if in["hook_event_name"] != "PreToolUse" || in["tool_name"] != "Bash" || in["cwd"] != "/root/dir" || in["session_id"] != "s1" {
		t.Fatalf("body %s", body)
	}
}

func TestFailures(t *testing.T) {
	// A refused connection.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	h, err := httphook.New(httphook.Config{}, claudecode.PreToolUse, json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q}`, url)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := intercept(t, h, 10*time.Second); err == nil || interceptors.FailureKind(err) != "error" {
		t.Fatalf("refused connection: %v", err)
	}

	// A server slower than the deadline.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)
	h, err = httphook.New(httphook.Config{}, claudecode.PreToolUse, json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q}`, slow.URL)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := intercept(t, h, 200*time.Millisecond); !errors.Is(err, interceptors.ErrTimeout) {
		t.Fatalf("slow server: %v", err)
	}

	// A body over the cap.
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"systemMessage":"`+strings.Repeat("a", 5000)+`"}`)
	}))
	defer big.Close()
	h, err = httphook.New(httphook.Config{MaxBody: 1000}, claudecode.PreToolUse, json.RawMessage(fmt.Sprintf(`{"type":"http","url":%q}`, big.URL)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := intercept(t, h, 10*time.Second); !errors.Is(err, interceptors.ErrBadReply) || !strings.Contains(err.Error(), "4020 more bytes left out") {
		t.Fatalf("big body: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	for handler, want := range map[string]string{
		`{"type":"http"}`:                               `url "" is not an http or https URL`,
		`{"type":"http","url":"ftp://x/y"}`:             `url "ftp://x/y"`,
		`{"type":"http","url":"http://x","x":1}`:        `unknown field "x"`,
		`{"type":"command","command":"x"}`:              `unknown field "command"`,
		`{"type":"http","url":"http://x","headers":[]}`: "cannot unmarshal array",
	} {
		if _, err := httphook.New(httphook.Config{}, claudecode.PreToolUse, json.RawMessage(handler)); !errors.Is(err, httphook.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", handler, err, want)
		}
	}
}
