package httpauth_test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/internal/httpauth"
)

// echo answers the identity the guard let through, and the identity
// headers it left on the request.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	id, ok := httpauth.IdentityOf(r.Context())
	if !ok {
		http.Error(w, "no identity", http.StatusInternalServerError)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"name": id.Name, "method": id.Method, "agents": id.Agents,
		"forwarded": r.Header.Get(httpauth.HeaderForwardedUser) + r.Header.Get(httpauth.HeaderForwardedEmail)})
})

// guarded serves echo behind a guard built by cfg (its Addr set to the
// test server's), over TLS with tlsOn.
func guarded(t *testing.T, cfg httpauth.Config, tlsOn bool) *httptest.Server {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	cfg.Addr, cfg.TLS = hs.Listener.Addr(), tlsOn
	g, err := httpauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = g.Wrap(echo)
	if tlsOn {
		hs.StartTLS()
	} else {
		hs.Start()
	}
	t.Cleanup(hs.Close)
	return hs
}

type reply struct {
	code   int
	body   string
	header http.Header
}

func (r reply) identity(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if r.code != 200 || json.Unmarshal([]byte(r.body), &v) != nil {
		t.Fatalf("%d %s: want the identity", r.code, r.body)
	}
	return v
}

// do sends method to hs's path with host as the Host header (hs's own
// when empty) and the headers given as name, value pairs.
func do(t *testing.T, c *http.Client, hs *httptest.Server, method, path, host, body string, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if c == nil {
		c = hs.Client()
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{res.StatusCode, string(b), res.Header}
}

func tokens(t *testing.T, file string) *httpauth.Tokens {
	t.Helper()
	tk, err := httpauth.ParseTokens(strings.NewReader(file), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

const (
	aliceToken  = "alice-0123456789abcdef0123456789abcdef"
	ciToken     = "ci-0123456789abcdef0123456789abcdef0123"
	proxySecret = "proxy-secret-0123456789abcdef0123456789"
)

// Only the loopback names with the listener's port and the public URLs'
// hosts are served; any other Host is 421, before the handler runs.
func TestHostAllowlist(t *testing.T) {
	pub, _ := httpauth.ParsePublicURL("https://hookbus.example.com")
	hs := guarded(t, httpauth.Config{Name: "test", PublicURLs: []*url.URL{pub}}, false)
	port := hs.Listener.Addr().(*net.TCPAddr).Port
	p := func(h string) string { return net.JoinHostPort(h, itoa(port)) }
	for host, want := range map[string]int{
		"":                               200,
		p("localhost"):                   200,
		p("LOCALHOST"):                   200,
		p("127.0.0.1"):                   200,
		p("::1"):                         200,
		"hookbus.example.com":            200,
		"hookbus.example.com:443":        200,
		"hookbus.example.com:80":         421,
		"attacker.example:" + itoa(port): 421,
		"localhost:1":                    421,
		"localhost":                      421,
		p("127.0.0.2"):                   421,
		"hookbus.example.com.evil.io":    421,
	} {
		r := do(t, nil, hs, "GET", "/", host, "")
		if r.code != want {
			t.Errorf("Host %q: %d %s, want %d", host, r.code, r.body, want)
		}
		if want == 421 && strings.Contains(r.body, "local:") {
			t.Errorf("Host %q: the handler answered: %s", host, r.body)
		}
	}
}

// A state-changing request from another origin is refused (403); one
// from a served origin, or from a program that sends none, passes.
func TestOriginOfStateChanges(t *testing.T) {
	hs := guarded(t, httpauth.Config{Name: "test"}, false)
	local := strings.Replace(hs.URL, "127.0.0.1", "localhost", 1)
	if r := do(t, nil, hs, "POST", "/x", strings.TrimPrefix(local, "http://"), "{}", "Origin", local); r.code != 200 {
		t.Errorf("POST from %s: %d %s", local, r.code, r.body)
	}
	for _, tc := range []struct {
		hdr  []string
		want int
	}{
		{nil, 200},
		{[]string{"Origin", hs.URL}, 200},
		{[]string{"Origin", local}, 403},
		{[]string{"Origin", "https://evil.example"}, 403},
		{[]string{"Origin", "null"}, 403},
		{[]string{"Origin", "null", "Sec-Fetch-Site", "same-origin"}, 200},
		{[]string{"Origin", "null", "Sec-Fetch-Site", "cross-site"}, 403},
		{[]string{"Origin", strings.Replace(hs.URL, "http:", "https:", 1)}, 403},
		{[]string{"Sec-Fetch-Site", "cross-site"}, 403},
		{[]string{"Sec-Fetch-Site", "same-origin", "Origin", hs.URL}, 200},
	} {
		if r := do(t, nil, hs, "POST", "/x", "", "{}", tc.hdr...); r.code != tc.want {
			t.Errorf("POST with %v: %d %s, want %d", tc.hdr, r.code, r.body, tc.want)
		}
	}
	if r := do(t, nil, hs, "GET", "/x", "", "", "Origin", "https://evil.example"); r.code != 200 {
		t.Errorf("a GET from another origin reads like any: %d", r.code)
	}
}

// With no way to authenticate (loopback only) every caller is the local
// user; an Authorization header changes nothing.
func TestLocalIdentity(t *testing.T) {
	hs := guarded(t, httpauth.Config{Name: "test"}, false)
	id := do(t, nil, hs, "GET", "/", "", "", "Authorization", "Bearer whatever-0123456789").identity(t)
	if id["name"] != httpauth.LocalName() || id["method"] != httpauth.MethodLocal || !strings.HasPrefix(httpauth.LocalName(), "local:") {
		t.Fatalf("local identity %v", id)
	}
}

// A bearer token of the file is its holder (name and agents); a wrong one,
// another scheme or none is 401.
func TestBearerToken(t *testing.T) {
	hs := guarded(t, httpauth.Config{Name: "test", Tokens: tokens(t, aliceToken+" alice\n"+ciToken+" agents=claude-ci,claude-nightly\n")}, false)
	id := do(t, nil, hs, "GET", "/", "", "", "Authorization", "Bearer "+aliceToken).identity(t)
	if id["name"] != "alice" || id["method"] != httpauth.MethodToken || id["agents"] != nil {
		t.Fatalf("alice: %v", id)
	}
	id = do(t, nil, hs, "GET", "/", "", "", "Authorization", "bearer "+ciToken).identity(t)
	if !strings.HasPrefix(id["name"].(string), "token-") || len(id["agents"].([]any)) != 2 {
		t.Fatalf("the ci token: %v", id)
	}
	for _, auth := range []string{"", "Bearer " + aliceToken + "x", "Bearer", "Basic " + aliceToken, "Bearer " + aliceToken[:len(aliceToken)-1]} {
		r := do(t, nil, hs, "GET", "/", "", "", "Authorization", auth)
		if r.code != 401 || r.header.Get("WWW-Authenticate") == "" || strings.Contains(r.body, aliceToken) {
			t.Errorf("Authorization %q: %d %s, want 401", auth, r.code, r.body)
		}
	}
}

// The login form signs a token's holder in with an HttpOnly, SameSite
// Strict cookie; a wrong token does not; a forged or cleared cookie is
// nobody.
func TestLoginCookie(t *testing.T) {
	hs := guarded(t, httpauth.Config{Name: "test", Tokens: tokens(t, aliceToken+" alice\n"), Login: true}, false)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if r := do(t, c, hs, "GET", "/", "", ""); r.code != http.StatusSeeOther || r.header.Get("Location") != "login" {
		t.Fatalf("the page signed out: %d %v, want a redirect to login", r.code, r.header)
	}
	if r := do(t, c, hs, "GET", "/api/x", "", ""); r.code != 401 || !strings.Contains(r.body, `"login":"login"`) {
		t.Fatalf("an API call signed out: %d %s, want 401 pointing at the form", r.code, r.body)
	}
	if r := do(t, c, hs, "GET", "/login", "", ""); r.code != 200 || !strings.Contains(r.body, `name="token"`) {
		t.Fatalf("the form: %d %s", r.code, r.body)
	}
	form := "application/x-www-form-urlencoded"
	if r := do(t, c, hs, "POST", "/login", "", "token=wrong-0123456789abcdef", "Content-Type", form); r.code != 401 || len(r.header.Values("Set-Cookie")) != 0 {
		t.Fatalf("a wrong token: %d %v", r.code, r.header)
	}
	r := do(t, c, hs, "POST", "/login", "", "token="+aliceToken, "Content-Type", form, "Origin", hs.URL)
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "./" {
		t.Fatalf("sign in: %d %v", r.code, r.header)
	}
	set := r.header.Get("Set-Cookie")
	for _, attr := range []string{"hookbus-session=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(set, attr) {
			t.Errorf("cookie %q lacks %s", set, attr)
		}
	}
	if strings.Contains(set, "Secure") || strings.Contains(set, aliceToken) {
		t.Errorf("cookie %q over plain http: not Secure, no token in it", set)
	}
	if id := do(t, c, hs, "GET", "/", "", "").identity(t); id["name"] != "alice" || id["method"] != httpauth.MethodSession {
		t.Fatalf("signed in: %v", id)
	}
	// A cookie whose session id is changed is not one of this server's.
	value := strings.TrimPrefix(strings.Split(set, ";")[0], "hookbus-session=")
	forged := strings.ToLower(value[:4]) + value[4:]
	if r := do(t, nil, hs, "GET", "/api/x", "", "", "Cookie", "hookbus-session="+forged); r.code != 401 {
		t.Fatalf("a forged cookie: %d %s", r.code, r.body)
	}
	if r := do(t, c, hs, "POST", "/logout", "", "", "Origin", hs.URL); r.code != http.StatusSeeOther {
		t.Fatalf("sign out: %d", r.code)
	}
	if r := do(t, c, hs, "GET", "/api/x", "", ""); r.code != 401 {
		t.Fatalf("after signing out: %d %s", r.code, r.body)
	}
	// Another server's cookie (another process's sessions) is nobody here.
	other := guarded(t, httpauth.Config{Name: "test", Tokens: tokens(t, aliceToken+" alice\n"), Login: true}, false)
	if r := do(t, nil, other, "GET", "/api/x", "", "", "Cookie", "hookbus-session="+value); r.code != 401 {
		t.Fatalf("another server's cookie: %d", r.code)
	}
}

// Over TLS the cookie is Secure and __Host- prefixed.
func TestLoginCookieOverTLS(t *testing.T) {
	hs := guarded(t, httpauth.Config{Name: "test", Tokens: tokens(t, aliceToken+" alice\n"), Login: true}, true)
	c := hs.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r := do(t, c, hs, "POST", "/login", "", "token="+aliceToken, "Content-Type", "application/x-www-form-urlencoded")
	if set := r.header.Get("Set-Cookie"); r.code != http.StatusSeeOther || !strings.HasPrefix(set, "__Host-hookbus-session=") || !strings.Contains(set, "Secure") {
		t.Fatalf("sign in over TLS: %d %q", r.code, set)
	}
}

// X-Forwarded-User / -Email say who calls only from a trusted proxy that
// sends the proxy secret; from any other peer, or without the secret,
// they are removed and the caller must authenticate.
func TestForwardedIdentity(t *testing.T) {
	trusted := guarded(t, httpauth.Config{Name: "test", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, ProxySecret: []byte(proxySecret)}, false)
	id := do(t, nil, trusted, "GET", "/", "", "", httpauth.HeaderForwardedUser, "alice", httpauth.HeaderForwardedEmail, "alice@example.com", httpauth.HeaderProxySecret, proxySecret).identity(t)
	if id["name"] != "alice" || id["method"] != httpauth.MethodProxy {
		t.Fatalf("from the proxy: %v", id)
	}
	id = do(t, nil, trusted, "GET", "/", "", "", httpauth.HeaderForwardedEmail, "bob@example.com", httpauth.HeaderProxySecret, proxySecret).identity(t)
	if id["name"] != "bob@example.com" {
		t.Fatalf("email only: %v", id)
	}
	if r := do(t, nil, trusted, "GET", "/", "", "", httpauth.HeaderProxySecret, proxySecret); r.code != 401 {
		t.Fatalf("from the proxy without headers: %d %s", r.code, r.body)
	}
	// From the proxy's address without the secret (any local process):
	// nobody, whatever the headers say.
	for _, sent := range []string{"", "wrong-" + proxySecret, proxySecret[:len(proxySecret)-1]} {
		hdr := []string{httpauth.HeaderForwardedUser, "ciso"}
		if sent != "" {
			hdr = append(hdr, httpauth.HeaderProxySecret, sent)
		}
		if r := do(t, nil, trusted, "GET", "/", "", "", hdr...); r.code != 401 || strings.Contains(r.body, "ciso") {
			t.Fatalf("X-Forwarded-User from the proxy's address with secret %q: %d %s, want 401", sent, r.code, r.body)
		}
	}
	elsewhere := guarded(t, httpauth.Config{Name: "test", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}, ProxySecret: []byte(proxySecret),
		Tokens: tokens(t, aliceToken+" alice\n")}, false)
	if r := do(t, nil, elsewhere, "GET", "/", "", "", httpauth.HeaderForwardedUser, "the-ciso"); r.code != 401 || strings.Contains(r.body, "the-ciso") {
		t.Fatalf("forwarded headers from an untrusted peer: %d %s, want 401", r.code, r.body)
	}
	id = do(t, nil, elsewhere, "GET", "/", "", "", httpauth.HeaderForwardedUser, "the-ciso", "Authorization", "Bearer "+aliceToken).identity(t)
	if id["name"] != "alice" || id["forwarded"] != "" {
		t.Fatalf("an untrusted peer's headers must be gone: %v", id)
	}
}

// A listener off loopback needs a way to authenticate and a public URL.
func TestNewRefusesUnprotected(t *testing.T) {
	open := &net.TCPAddr{IP: net.IPv4zero, Port: 8080}
	pub, _ := httpauth.ParsePublicURL("https://hookbus.example.com")
	for _, cfg := range []httpauth.Config{
		{Name: "test", Addr: open},
		{Name: "test", Addr: open, PublicURLs: []*url.URL{pub}},
		{Name: "test", Addr: open, Tokens: tokens(t, aliceToken+"\n")},
	} {
		if _, err := httpauth.New(cfg); !errors.Is(err, httpauth.ErrUnprotected) || !strings.Contains(err.Error(), "0.0.0.0:8080") {
			t.Errorf("New(%+v): %v, want ErrUnprotected naming the address", cfg, err)
		}
	}
	if _, err := httpauth.New(httpauth.Config{Name: "test", Addr: open, Tokens: tokens(t, aliceToken+"\n"), PublicURLs: []*url.URL{pub}}); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
