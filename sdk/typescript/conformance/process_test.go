package conformance_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/nats-io/nats.go"
)

// sdkDir is sdk/typescript.
func sdkDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

// needSDK skips the test when node or the built SDK is missing.
func needSDK(t testing.TB) (node, server string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipped: node is not on PATH (the TypeScript SDK's tests need Node.js 20 or later)")
	}
	server = filepath.Join(sdkDir(), "build", "conformance", "server.js")
	for _, f := range []string{server, filepath.Join(sdkDir(), "dist", "index.js"), filepath.Join(sdkDir(), "node_modules", "@nats-io", "services")} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("skipped: the TypeScript SDK is not built (%s is missing): run make sdk-ts (npm ci and npm run build in sdk/typescript)", f)
		}
	}
	return node, server
}

// tsProcess is conformance/server.ts, serving plugins with the SDK.
type tsProcess struct {
	t   testing.TB
	nc  *nats.Conn // the test's control connection
	out *bustest.Buffer
	cmd *exec.Cmd
}

// startTS starts the TypeScript side against the server at url (env adds
// to its environment: CONFORMANCE_USER and CONFORMANCE_PASS are its
// credentials), and waits for it to say it is ready. t.Cleanup kills it.
func startTS(t testing.TB, url string, nc *nats.Conn, env ...string) *tsProcess {
	t.Helper()
	node, server := needSDK(t)
	p := &tsProcess{t: t, nc: nc, out: &bustest.Buffer{}}
	cmd := exec.Command(node, server, url)
	p.cmd = cmd
	cmd.Dir = sdkDir()
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = p.out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", server, err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- nil
				break
			}
			_, _ = p.out.Write([]byte(sc.Text() + "\n"))
		}
		ready <- errors.New("exited")
		_, _ = bufio.NewReader(stdout).WriteTo(p.out)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("TypeScript side's output:\n%s", p.out)
		}
	})
	select {
	case err := <-ready:
		if err != nil {
			_ = cmd.Wait()
			t.Fatalf("the TypeScript side %s: %s", err, p.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the TypeScript side did not start within 30s: %s", p.out)
	}
	t.Logf("TypeScript side ready in %v", time.Since(start).Round(time.Millisecond))
	return p
}

// controlError is a refusal of a control request, with the SDK's error kind.
type controlError struct{ Kind, Message string }

func (e *controlError) Error() string { return e.Kind + ": " + e.Message }

// control sends a control request and returns the TypeScript side's error.
func (p *tsProcess) control(verb string, req any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	m, err := p.nc.Request("conformance."+verb, body, 30*time.Second)
	if err != nil {
		return fmt.Errorf("control %s: %w", verb, err)
	}
	var out struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		Kind  string `json:"kind"`
	}
	if err := json.Unmarshal(m.Data, &out); err != nil {
		return fmt.Errorf("control %s: reply %q: %w", verb, m.Data, err)
	}
	if !out.OK {
		return &controlError{Kind: out.Kind, Message: out.Error}
	}
	return nil
}

// serve has the TypeScript side serve plugin on stages, its decisions
// those of ic (a bridge: the SDK decodes each request, claim-checked data
// included, and hands the request it built to ic here); nil ic serves a
// handler that allows at once. t.Cleanup stops it.
func (p *tsProcess) serve(t testing.TB, plugin string, stages []events.Stage, ic interceptors.Interceptor, extra map[string]any) error {
	t.Helper()
	req := map[string]any{"plugin": plugin, "stages": stages, "handler": "allow"}
	for k, v := range extra {
		req[k] = v
	}
	if ic != nil {
		req["handler"] = "bridge"
		if len(stages) != 1 {
			t.Fatalf("a bridge serves one stage, not %v", stages)
		}
		subject := "conformance.call." + plugin + "." + strings.ReplaceAll(string(stages[0]), ".", "_")
		sub, err := p.nc.Subscribe(subject, func(m *nats.Msg) { go answer(m, plugin, ic) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
		if err := p.nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.control("serve", req); err != nil {
		return err
	}
	t.Cleanup(func() {
		if err := p.control("stop", map[string]any{"plugin": plugin, "stages": stages}); err != nil {
			t.Errorf("stop %s: %v", plugin, err)
		}
	})
	return nil
}

// call is a request the TypeScript side forwards: the stage, the event as
// it decoded it (CloudEvents structured JSON, data included) and the
// deadline it reckoned.
type call struct {
	Stage    events.Stage    `json:"stage"`
	Event    json.RawMessage `json:"event"`
	Deadline time.Time       `json:"deadline"`
}

// answer runs ic on a forwarded request and replies its decision or error
// (a panic's value, as "panic: ...", as remote.Serve reports one).
func answer(m *nats.Msg, plugin string, ic interceptors.Interceptor) {
	reply := func(v any) {
		b, _ := json.Marshal(v)
		_ = m.Respond(b)
	}
	var c call
	if err := json.Unmarshal(m.Data, &c); err != nil {
		reply(map[string]string{"error": "conformance: bad forward: " + err.Error()})
		return
	}
	ev, err := events.Decode(events.Header{"content-type": {"application/cloudevents+json"}}, c.Event)
	if err != nil {
		reply(map[string]string{"error": "conformance: the SDK's event does not decode: " + err.Error()})
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), c.Deadline)
	defer cancel()
	req := &interceptors.Request{Stage: c.Stage, Event: ev, Deadline: c.Deadline,
		Registration: interceptors.Registration{Plugin: plugin, Stage: c.Stage, Remote: true}}
	d, err := func() (d *interceptors.Decision, err error) {
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("panic: %v", v)
			}
		}()
		return ic.Intercept(ctx, req)
	}()
	if err != nil {
		reply(map[string]string{"error": err.Error()})
		return
	}
	reply(map[string]any{"decision": d})
}
