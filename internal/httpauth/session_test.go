package httpauth_test

import (
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/spf13/pflag"
)

// Signing out ends the session on the server: the cookie, wherever it was
// copied (another service on the same host name receives it too), signs
// nobody in afterwards.
func TestLogoutRevokesCookie(t *testing.T) {
	hs := guarded(t, httpauth.Config{Name: "test", Tokens: tokens(t, aliceToken+" alice\n"), Login: true}, false)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r := do(t, c, hs, "POST", "/login", "", "token="+aliceToken, "Content-Type", "application/x-www-form-urlencoded", "Origin", hs.URL)
	copied := strings.Split(r.header.Get("Set-Cookie"), ";")[0]
	if r.code != http.StatusSeeOther || !strings.HasPrefix(copied, "hookbus-session=") {
		t.Fatalf("sign in: %d %v", r.code, r.header)
	}
	if id := do(t, nil, hs, "GET", "/", "", "", "Cookie", copied).identity(t); id["name"] != "alice" {
		t.Fatalf("the copied cookie before signing out: %v", id)
	}
	if r := do(t, c, hs, "POST", "/logout", "", "", "Origin", hs.URL); r.code != http.StatusSeeOther {
		t.Fatalf("sign out: %d", r.code)
	}
	if r := do(t, nil, hs, "GET", "/api/x", "", "", "Cookie", copied); r.code != http.StatusUnauthorized {
		t.Fatalf("the copied cookie after signing out: %d %s, want 401", r.code, r.body)
	}
	// Another sign-in is a new session, and works.
	r = do(t, c, hs, "POST", "/login", "", "token="+aliceToken, "Content-Type", "application/x-www-form-urlencoded", "Origin", hs.URL)
	again := strings.Split(r.header.Get("Set-Cookie"), ";")[0]
	if again == copied {
		t.Fatal("a new sign-in reused the revoked session id")
	}
	if id := do(t, nil, hs, "GET", "/", "", "", "Cookie", again).identity(t); id["name"] != "alice" {
		t.Fatalf("signed in again: %v", id)
	}
}

// A login lasts an hour unless --session-ttl says otherwise; behind a
// proxy serving the page under a path, the cookie is sent for that path
// only.
func TestSessionLifetimeAndPath(t *testing.T) {
	tokenFile := writeFile(t, "tokens", aliceToken+" alice\n")
	for _, tc := range []struct {
		args []string
		ttl  time.Duration
		path string
	}{
		{nil, httpauth.DefaultSessionTTL, "/"},
		{[]string{"--session-ttl", "10m", "--public-url", "https://hookbus.example.com/hookbus"}, 10 * time.Minute, "/hookbus/"},
	} {
		f := &httpauth.Flags{Login: true}
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		f.Register(fs)
		if err := fs.Parse(append([]string{"--token-file", tokenFile}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		ln, err := f.Listen("127.0.0.1:0", httpauth.Options{Name: "test", Login: true})
		if err != nil {
			t.Fatal(err)
		}
		serve(t, ln)
		before := time.Now()
		res, err := noRedirect.Post("http://"+ln.Addr().String()+"/login", "application/x-www-form-urlencoded", strings.NewReader("token="+aliceToken))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		cs := res.Cookies()
		if res.StatusCode != http.StatusSeeOther || len(cs) != 1 {
			t.Fatalf("%v: sign in: %d %v", tc.args, res.StatusCode, res.Header)
		}
		if c := cs[0]; c.Path != tc.path || c.Expires.After(before.Add(tc.ttl+time.Second)) || c.Expires.Before(before.Add(tc.ttl-time.Minute)) {
			t.Errorf("%v: cookie path %q, expires in %s; want %q and %s", tc.args, c.Path, c.Expires.Sub(before), tc.path, tc.ttl)
		}
	}
	if httpauth.DefaultSessionTTL > time.Hour {
		t.Fatalf("default session lifetime %s", httpauth.DefaultSessionTTL)
	}
	if _, err := listen(t, &httpauth.Flags{Login: true}, "127.0.0.1:0", "--session-ttl", "0s"); err == nil || !strings.Contains(err.Error(), "--session-ttl") {
		t.Fatalf("--session-ttl 0s: %v", err)
	}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
