package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tokens of two gateway callers: mallory (any agent) and bob (bound to
// agent claude-bob).
const (
	malloryToken = "mallory-0123456789abcdef0123456789abcdef"
	bobToken     = "bob-0123456789abcdef0123456789abcdef0123"
)

// twoCallers writes a token file of mallory's and bob's tokens.
func twoCallers(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(malloryToken+" mallory\n"+bobToken+" bob agents=claude-bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// rawPost opens a TCP connection to the gateway at u and sends the
// headers of a POST of length bytes with token, and nothing of its body.
func rawPost(t *testing.T, u, token string, length int) net.Conn {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", pu.Path, pu.Host, token, length); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer reads the status of the response on c; 0 when the connection
// ends without one.
func answer(c net.Conn) int {
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// Four connections that declare 8 MiB bodies and trickle a byte at a time
// hold almost nothing of --max-body-total: every other caller is answered
// while they trickle, and each is cut off with 408 once it falls behind
// --min-body-rate after --read-timeout (the defaults).
func TestGatewaySlowBodiesStarveNoOne(t *testing.T) {
	nats, b := startBusWithGuard(t)
	u := startGateway(t, "--listen", "127.0.0.1:0", "--nats", nats, "--token-file", twoCallers(t))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	defer func() { close(stop); wg.Wait() }()
	answers := make(chan int, 4)
	for range 4 {
		c := rawPost(t, u, malloryToken, DefaultMaxBody)
		wg.Add(2)
		go func() { // a byte every 50 ms, until the gateway hangs up
			defer wg.Done()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		go func() {
			defer wg.Done()
			answers <- answer(c)
		}()
	}
	var got []int
	for i := 0; len(got) < 4; i++ {
		code, body := postHook(t, u+"/claude-bob", bobToken, hookInput(fmt.Sprintf("bob-%d", i), "UserPromptSubmit", `, "prompt": "hello"`))
		if code != http.StatusOK {
			t.Fatalf("bob's hook while mallory trickles: %d %s", code, body)
		}
		select {
		case code := <-answers:
			got = append(got, code)
		case <-time.After(200 * time.Millisecond): // pace bob's hooks
		}
		if i > 150 {
			t.Fatalf("after %d of bob's hooks (about 30 s), mallory's trickling bodies were answered %v, want 408 each", i, got)
		}
	}
	for _, code := range got {
		if code != http.StatusRequestTimeout {
			t.Fatalf("mallory's trickling bodies: %v, want 408 each", got)
		}
	}
	if evs, err := b.SessionEvents(t.Context(), "claude-bob", "bob-0"); err != nil || len(evs) == 0 {
		t.Fatalf("bob's first hook not recorded: %d events, %v", len(evs), err)
	}
}

// One caller holds at most --max-body-per-caller: mallory's four bodies of
// 8 MiB, sent all but their last byte, hold no more than 16 MiB of the 32
// (the defaults), and bob, bound to another agent, is answered.
func TestGatewayCallerShare(t *testing.T) {
	nats, _ := startBusWithGuard(t)
	u := startGateway(t, "--listen", "127.0.0.1:0", "--nats", nats, "--token-file", twoCallers(t))
	body := strings.Repeat(" ", DefaultMaxBody-1)
	answers := make(chan int, 4)
	for range 4 {
		c := rawPost(t, u, malloryToken, DefaultMaxBody)
		go func() {
			_, _ = io.WriteString(c, body) // fails once the gateway refused it
			answers <- answer(c)           // none while held (its last byte is due)
		}()
	}
	var refused []int
	for len(refused) < 2 {
		select {
		case code := <-answers:
			if code != http.StatusServiceUnavailable && code != 0 {
				t.Fatalf("mallory's stalled body: %d, want 503 (or the connection reset after it)", code)
			}
			refused = append(refused, code)
		case <-time.After(30 * time.Second):
			t.Fatalf("mallory's four stalled 8 MiB bodies: %d refused in 30 s, want at least 2 (her share is 16 MiB)", len(refused))
		}
	}
	code, out := postHook(t, u+"/claude-bob", bobToken, hookInput("bob-share", "UserPromptSubmit", `, "prompt": "hello"`))
	if code != http.StatusOK {
		t.Fatalf("bob's hook while mallory holds her share: %d %s", code, out)
	}
}

// Headers that come slower than --read-timeout: the connection is closed.
func TestGatewaySlowHeaders(t *testing.T) {
	nats, _ := startBusWithGuard(t)
	u := startGateway(t, "--listen", "127.0.0.1:0", "--nats", nats, "--read-timeout", "1s")
	pu, _ := url.Parse(u)
	c, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\n", pu.Path, pu.Host); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(c)
		closed <- err
	}()
	for i := 0; ; i++ {
		select {
		case err := <-closed:
			if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
				t.Fatalf("the slow headers' connection: %v", err)
			}
			return
		case <-time.After(100 * time.Millisecond): // a header line every 100 ms
		}
		if _, err := fmt.Fprintf(c, "X-Slow-%d: 1\r\n", i); err != nil {
			return // closed while writing
		}
		if i > 300 {
			t.Fatal("a connection sending a header line every 100 ms for 30 s is still open")
		}
	}
}

// --max-body-per-caller defaults to half of --max-body-total, at least
// --max-body, so a smaller total alone still starts; a share over the
// total is a usage error naming both flags.
func TestGatewayBodyFlags(t *testing.T) {
	nats, _ := startBusWithGuard(t)
	startGateway(t, "--listen", "127.0.0.1:0", "--nats", nats, "--max-body-total", "8MiB")
	var out, errOut strings.Builder
	code := run(t.Context(), []string{"gateway", "--listen", "127.0.0.1:0", "--nats", nats, "--max-body-per-caller", "64MiB"}, strings.NewReader(""), &out, &errOut)
	if code != exitUsage || !strings.Contains(errOut.String(), "--max-body-per-caller") || !strings.Contains(errOut.String(), "--max-body-total") {
		t.Fatalf("a share over the total: exit %d %q", code, errOut.String())
	}
}
