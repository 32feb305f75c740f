package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/anthropic"
	"github.com/hookbus/hookbus/loop/openai"
)

var fakeModelURL = regexp.MustCompile(`listening on (http://127\.0\.0\.1:[0-9]+)`)

// startFakeModel runs loop fake-model with script (written to a file)
// until the test ends; it returns the URL it prints and its stderr.
func startFakeModel(t *testing.T, script string, args ...string) (string, *bustest.Buffer) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bustest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"fake-model", "--script", file}, args...), strings.NewReader(""), &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("loop fake-model did not stop when its ctx ended")
		}
	})
	bustest.Eventuallyf(t, 30*time.Second, func() bool {
		select {
		case code := <-done:
			done <- code
			return true
		default:
		}
		return fakeModelURL.MatchString(errOut.String())
	}, "loop fake-model to listen: %s", &errOut)
	m := fakeModelURL.FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("loop fake-model stopped: %s", &errOut)
	}
	return m[1], &errOut
}

// loop's openai and anthropic providers, pointed at the fake with the
// environment it prints, get the scripted turns: a tool call, then a reply.
func TestFakeModelProviders(t *testing.T) {
	url, stderr := startFakeModel(t, `turns:
  - tool: {name: calculator, arguments: {expression: "6*7"}}
  - reply: It is 42.
  - tool: {name: calculator, arguments: {expression: "6*7"}}
  - reply: It is 42.
`, "--listen", "127.0.0.1:0")
	for _, want := range []string{"OPENAI_BASE_URL=" + url + "/v1 OPENAI_API_KEY=fake", "ANTHROPIC_BASE_URL=" + url + " ANTHROPIC_API_KEY=fake"} {
		if !strings.Contains(stderr.String(), want) {
			t.Fatalf("loop fake-model does not print %q:\n%s", want, stderr)
		}
	}
	t.Setenv("OPENAI_BASE_URL", url+"/v1")
	t.Setenv("OPENAI_API_KEY", "fake")
	t.Setenv("ANTHROPIC_BASE_URL", url)
	t.Setenv("ANTHROPIC_API_KEY", "fake")
	oa, err := openai.New(openai.Config{Model: "gpt-4.1-mini"})
	if err != nil {
		t.Fatal(err)
	}
	an, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	req := &loop.ModelRequest{Messages: []events.Message{{Role: events.RoleUser, Content: "What is 6*7?"}},
		Tools: []events.ToolSpec{{Name: "calculator", Description: "Evaluates an expression"}}}
	for _, m := range []loop.Model{oa, an} {
		r, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].Name != "calculator" || !strings.Contains(string(r.Message.ToolCalls[0].Arguments), `"6*7"`) {
			t.Fatalf("%s: first turn %+v", r.Provider, r.Message)
		}
		r, err = m.Generate(context.Background(), req)
		if err != nil || r.Message.Content != "It is 42." {
			t.Fatalf("second turn %+v %v", r, err)
		}
	}
	// A web page that rebinds its name to loopback reaches nothing.
	hreq, err := http.NewRequest("POST", url+"/v1/messages", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	hreq.Host = "attacker.example:8790"
	res, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("a request for another host: %s", res.Status)
	}
	// The script is spent: the next call fails at once, not to be retried.
	_, err = an.Generate(context.Background(), req)
	var me *loop.ModelError
	if !errors.As(err, &me) || me.Retryable || me.Status != 501 || !strings.Contains(err.Error(), "no turn left") {
		t.Fatalf("a call beyond the script: %v", err)
	}
	bustest.Eventuallyf(t, 10*time.Second, func() bool {
		return strings.Contains(stderr.String(), "request 4: anthropic messages claude-sonnet-4-5: turn 4")
	}, "the log of each request: %s", stderr)
}

// A bad script is refused with its file:line, an address off loopback
// without --allow-remote, and the default address is loopback.
func TestFakeModelRefuses(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(bad, []byte("turns:\n  - reply: a\n  - rpely: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte("turns:\n  - reply: a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--script", bad}, exitFailure, bad + ":3: fakellm: bad script: field rpely not found"},
		{[]string{"--script", good, "--listen", "0.0.0.0:0"}, exitUsage, "--listen 0.0.0.0:0 is not a loopback address"},
		{[]string{"--script", good, "--listen", ":0"}, exitUsage, "--listen :0 is not a loopback address"},
		{[]string{"--listen", "127.0.0.1:0"}, exitUsage, "give the script of turns with --script FILE"},
	} {
		var out, errOut strings.Builder
		code := run(context.Background(), append([]string{"fake-model"}, c.args...), strings.NewReader(""), &out, &errOut)
		if code != c.code || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, %s; want %d, %s", c.args, code, errOut.String(), c.code, c.want)
		}
	}
	if f := fakeModelCmd(nil).Flags().Lookup("listen"); f == nil || !strings.HasPrefix(f.DefValue, "127.0.0.1:") {
		t.Errorf("the default --listen is not loopback: %+v", f)
	}
}

// --record writes each request, as received, to the file as a line of
// JSON: the API it was read as, the turn that answered it, and the body,
// in which a client's tool result (a hook's reason) can be read.
func TestFakeModelRecords(t *testing.T) {
	record := filepath.Join(t.TempDir(), "requests.jsonl")
	url, _ := startFakeModel(t, "turns:\n  - reply: Hello.\n", "--listen", "127.0.0.1:0", "--record", record)
	for _, body := range []string{`{"model":"m","messages":[{"role":"tool","content":"denied: no rm -rf"}]}`, `{"model":"m"}`} {
		resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines recorded:\n%s", len(lines), b)
	}
	var first, second struct {
		N    int             `json:"n"`
		Path string          `json:"path"`
		API  string          `json:"api"`
		Turn int             `json:"turn"`
		Body json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first.N != 1 || first.Path != "/v1/chat/completions" || first.API != "openai chat" || first.Turn != 1 || !strings.Contains(string(first.Body), "denied: no rm -rf") {
		t.Errorf("first request recorded as %s", lines[0])
	}
	if second.N != 2 || second.Turn != 0 {
		t.Errorf("a request no turn answered recorded as %s", lines[1])
	}
}
