package httpauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/spf13/pflag"
)

// listen parses args as a command's listener flags and listens on addr.
func listen(t *testing.T, f *httpauth.Flags, addr string, args ...string) (*httpauth.Listener, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.Listen(addr, httpauth.Options{Name: "test"})
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Off loopback, Listen names the flags that are missing; with them it
// listens.
func TestListenOffLoopback(t *testing.T) {
	tokenFile := writeFile(t, "tokens", aliceToken+" alice\n")
	for _, tc := range []struct {
		flags httpauth.Flags
		args  []string
		says  []string
	}{
		{httpauth.Flags{Proxies: true}, nil, []string{"0.0.0.0:0", "--token-file FILE", "--trusted-proxy CIDR", "--public-url URL"}},
		{httpauth.Flags{TokenEnv: "HOOKBUS_TEST_TOKEN"}, []string{"--public-url", "http://gw.example:8480"}, []string{"--token-file FILE (or $HOOKBUS_TEST_TOKEN)"}},
		{httpauth.Flags{Prefix: "metrics-"}, []string{"--metrics-token-file", tokenFile}, []string{"--metrics-public-url URL"}},
	} {
		_, err := listen(t, &tc.flags, "0.0.0.0:0", tc.args...)
		if !errors.Is(err, httpauth.ErrUnprotected) {
			t.Errorf("%v: %v, want ErrUnprotected", tc.args, err)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%v: %q does not say %q", tc.args, err, s)
			}
		}
	}
	ln, err := listen(t, &httpauth.Flags{}, "0.0.0.0:0", "--token-file", tokenFile, "--public-url", "https://hookbus.example.com/ui/")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ln.URL() != "https://hookbus.example.com/" {
		t.Fatalf("URL %s", ln.URL())
	}
	t.Setenv("HOOKBUS_TEST_TOKEN", "tiny")
	if _, err := listen(t, &httpauth.Flags{TokenEnv: "HOOKBUS_TEST_TOKEN"}, "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "$HOOKBUS_TEST_TOKEN") || strings.Contains(err.Error(), "tiny") {
		t.Fatalf("a short token in the environment: %v", err)
	}
	for _, args := range [][]string{
		{"--public-url", "ftp://x"}, {"--public-url", "https://"}, {"--public-url", "https://u:p@x"},
		{"--trusted-proxy", "0.0.0.0/0"}, {"--trusted-proxy", "proxy.internal"},
		{"--http-tls-cert", tokenFile}, {"--http-tls-cert", tokenFile, "--http-tls-key", tokenFile},
	} {
		if _, err := listen(t, &httpauth.Flags{Proxies: true}, "127.0.0.1:0", args...); !errors.Is(err, httpauth.ErrInvalidConfig) || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}

// With --http-tls-cert/--http-tls-key the listener serves TLS, and stops when its
// ctx ends.
func TestListenTLS(t *testing.T) {
	cert, key, pool := selfSigned(t)
	ln, err := listen(t, &httpauth.Flags{}, "127.0.0.1:0", "--http-tls-cert", cert, "--http-tls-key", key)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ln.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL %s", ln.URL())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ln.Serve(ctx, echo) }()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	res, err := c.Get(ln.URL())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.TLS == nil {
		t.Fatalf("GET over TLS: %d", res.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return when its ctx ended")
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key; it returns
// their files and a pool trusting it.
func selfSigned(t *testing.T) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hookbus test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(parsed)
	return writeFile(t, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))),
		writeFile(t, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))), pool
}
