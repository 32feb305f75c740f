package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/telemetry"
	"github.com/spf13/pflag"
)

// The metrics endpoint stands behind the listener's guard: its own host
// names only, and the bearer token when a token file is given; off
// loopback it needs both.
func TestServeMetricsGuarded(t *testing.T) {
	const token = "prometheus-0123456789abcdef0123456789abcdef"
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(token+" prometheus\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := func(addr string, args ...string) (*httpauth.Listener, error) {
		fs := pflag.NewFlagSet("metrics", pflag.ContinueOnError)
		f := httpauth.Flags{Prefix: "metrics-"}
		f.Register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f.Listen(addr, httpauth.Options{Name: "metrics"})
	}
	if _, err := listen("0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "--metrics-token-file") {
		t.Fatalf("metrics off loopback without a token: %v", err)
	}
	ln, err := listen("127.0.0.1:0", "--metrics-token-file", file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	telemetry.ServeMetrics(ctx, ln, telemetry.NewMetrics())
	get := func(host, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", ln.URL()+"metrics", nil)
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("", token); code != 200 || !strings.Contains(body, "hookbus_") {
		t.Fatalf("with the token: %d %.200s", code, body)
	}
	if code, _ := get("", ""); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", code)
	}
	if code, body := get("attacker.example:9464", token); code != http.StatusMisdirectedRequest || strings.Contains(body, "hookbus_") {
		t.Fatalf("another host: %d %.200s", code, body)
	}
}
