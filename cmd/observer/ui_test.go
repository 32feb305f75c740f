package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/nats-io/nkeys"
)

// observer ui serves the page over a real bus with the keys it was given,
// stops when its ctx ends, and refuses a key that is none.
func TestUICommand(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	bustest.Provision(t, nc)
	kp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	if code, _, errOut := observe(t, "ui", "--nats", srv.ClientURL(), "--public-key", "not-a-key"); code != exitUsage || !strings.Contains(errOut, "not-a-key") {
		t.Fatalf("a bad key: exit %d %q, want 2 naming it", code, errOut)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bustest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ui", "--nats", srv.ClientURL(), "--listen", "127.0.0.1:0", "--public-key", pub}, &out, &errOut)
	}()
	addr := regexp.MustCompile(`http://[0-9.:]+/`)
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return addr.MatchString(out.String()) }, "observer ui to print its URL: %s %s", &out, &errOut)
	resp, err := http.Get(addr.FindString(out.String()) + "api/config")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(out.String(), "read-only") {
		t.Fatalf("GET /api/config: %d %s; stdout %s", resp.StatusCode, body, &out)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("observer ui stopped with %d: %s", code, &errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("observer ui did not stop when its ctx ended")
	}
}

// observer ui off loopback without a way to authenticate refuses to
// start, naming the address and what to give.
func TestUIOpenListenRefused(t *testing.T) {
	srv, nc := bustest.Start(t, bustest.WithListener())
	bustest.Provision(t, nc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bustest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ui", "--nats", srv.ClientURL(), "--listen", "0.0.0.0:0", "--allow-approvals"}, &out, &errOut)
	}()
	listening := regexp.MustCompile(`https?://\S+/`)
	var code int
	bustest.Eventuallyf(t, 30*time.Second, func() bool {
		select {
		case code = <-done:
			return true
		default:
			return listening.MatchString(out.String())
		}
	}, "observer ui to stop or listen")
	if listening.MatchString(out.String()) {
		t.Fatalf("observer ui --listen 0.0.0.0:0 without authentication serves: %s", &out)
	}
	if code != exitUsage || !strings.Contains(errOut.String(), "0.0.0.0") || !strings.Contains(errOut.String(), "--token-file") || !strings.Contains(errOut.String(), "--trusted-proxy") {
		t.Fatalf("exit %d %q, want 2 naming the address, --token-file and --trusted-proxy", code, &errOut)
	}
}
