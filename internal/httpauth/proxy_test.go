package httpauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/internal/httpauth"
)

// serve serves echo on ln until the test ends.
func serve(t *testing.T, ln *httpauth.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ln.Serve(ctx, echo) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return when its ctx ended")
		}
	})
}

// get sends GET / to ln with the headers given as name, value pairs.
func get(t *testing.T, ln *httpauth.Listener, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", ln.URL(), nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// The proxy recipe: a listener on loopback behind a proxy on the same
// machine. Its address is every local process's, so --trusted-proxy alone
// is refused; with the proxy's secret, a local process that skips the
// proxy and says X-Forwarded-User is nobody, and the proxy, sending the
// secret, says who calls.
func TestTrustedProxyNeedsSecret(t *testing.T) {
	if _, err := listen(t, &httpauth.Flags{Proxies: true, Login: true}, "127.0.0.1:0", "--trusted-proxy", "127.0.0.1"); !errors.Is(err, httpauth.ErrInvalidConfig) || !strings.Contains(err.Error(), "--trusted-proxy-secret-file") {
		t.Fatalf("--trusted-proxy without a secret: %v, want ErrInvalidConfig naming --trusted-proxy-secret-file", err)
	}
	secret := writeFile(t, "proxy-secret", proxySecret+"\n")
	ln, err := listen(t, &httpauth.Flags{Proxies: true, Login: true}, "127.0.0.1:0", "--trusted-proxy", "127.0.0.1", "--trusted-proxy-secret-file", secret)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, ln)
	if code, body := get(t, ln, httpauth.HeaderForwardedUser, "ciso"); code != http.StatusUnauthorized || strings.Contains(body, "ciso") {
		t.Fatalf("a local process saying X-Forwarded-User: ciso: %d %s, want 401", code, body)
	}
	if code, body := get(t, ln, httpauth.HeaderForwardedUser, "ciso", httpauth.HeaderProxySecret, "guess-0123456789abcdef0123456789abcdef"); code != http.StatusUnauthorized || strings.Contains(body, "ciso") {
		t.Fatalf("a wrong proxy secret: %d %s, want 401", code, body)
	}
	code, body := get(t, ln, httpauth.HeaderForwardedUser, "ciso", httpauth.HeaderProxySecret, proxySecret)
	if code != http.StatusOK || !strings.Contains(body, `"name":"ciso"`) || !strings.Contains(body, `"method":"proxy"`) || strings.Contains(body, proxySecret) {
		t.Fatalf("the proxy: %d %s", code, body)
	}
	if _, err := httpauth.New(httpauth.Config{Name: "test", Addr: ln.Addr(), TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}); !errors.Is(err, httpauth.ErrInvalidConfig) {
		t.Fatalf("New with a trusted proxy and no secret: %v", err)
	}
}

// A --trusted-proxy wider than one private network, or than a /24 of
// public addresses, is refused.
func TestTrustedProxyTooBroad(t *testing.T) {
	for _, s := range []string{"0.0.0.0/0", "0.0.0.0/1", "10.0.0.0/7", "128.0.0.0/2", "8.8.0.0/16", "203.0.113.0/23", "::/0", "::/1", "2001:db8::/48", "::ffff:0.0.0.0/97"} {
		if _, err := httpauth.ParseTrustedProxy(s); !errors.Is(err, httpauth.ErrInvalidConfig) || !strings.Contains(err.Error(), "too broad") {
			t.Errorf("ParseTrustedProxy(%q): %v, want too broad", s, err)
		}
	}
	for s, want := range map[string]string{
		"127.0.0.1": "127.0.0.1/32", "10.0.0.0/8": "10.0.0.0/8", "10.9.0.0/16": "10.9.0.0/16", "172.16.0.0/12": "172.16.0.0/12",
		"192.168.1.0/24": "192.168.1.0/24", "203.0.113.0/24": "203.0.113.0/24", "203.0.113.7": "203.0.113.7/32",
		"fd00::/8": "fd00::/8", "2001:db8::/64": "2001:db8::/64", "::1": "::1/128", "::ffff:10.0.0.0/104": "10.0.0.0/8",
	} {
		p, err := httpauth.ParseTrustedProxy(s)
		if err != nil || p.String() != want {
			t.Errorf("ParseTrustedProxy(%q) = %v, %v; want %s", s, p, err, want)
		}
	}
}

// A token or secret file every user may read is refused, and so is a
// token or secret shorter than 32 bytes.
func TestSecretFiles(t *testing.T) {
	tokensFile := writeFile(t, "tokens", aliceToken+" alice\n")
	if _, err := httpauth.LoadTokens(tokensFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tokensFile, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := httpauth.LoadTokens(tokensFile); err != nil {
		t.Fatalf("a token file its group may read: %v", err)
	}
	for _, mode := range []os.FileMode{0o644, 0o604, 0o602} {
		if err := os.Chmod(tokensFile, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := httpauth.LoadTokens(tokensFile); !errors.Is(err, httpauth.ErrInvalidConfig) || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("a token file of mode %04o: %v, want refused saying chmod 600", mode, err)
		}
		if _, err := listen(t, &httpauth.Flags{}, "127.0.0.1:0", "--token-file", tokensFile); !errors.Is(err, httpauth.ErrInvalidConfig) || !strings.Contains(err.Error(), "--token-file") {
			t.Errorf("--token-file of mode %04o: %v", mode, err)
		}
	}
	short := writeFile(t, "short", "0123456789abcdef alice\n")
	if _, err := httpauth.LoadTokens(short); !errors.Is(err, httpauth.ErrInvalidConfig) || !strings.Contains(err.Error(), "too short") || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Errorf("a token of 16 characters: %v", err)
	}
	for content, says := range map[string]string{"short-secret\n": "at least 32", "": "at least 32", "a secret with spaces 0123456789abcdef\n": "space"} {
		if _, err := httpauth.ReadSecretFile(writeFile(t, "secret", content)); !errors.Is(err, httpauth.ErrInvalidConfig) || !strings.Contains(err.Error(), says) {
			t.Errorf("secret %q: %v, want %q", content, err, says)
		}
	}
	open := writeFile(t, "secret", proxySecret+"\n")
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := httpauth.ReadSecretFile(open); !errors.Is(err, httpauth.ErrInvalidConfig) {
		t.Errorf("a world-readable secret file: %v", err)
	}
}
