package webui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/webui"
)

const (
	aliceToken  = "alice-0123456789abcdef0123456789abcdef"
	bobToken    = "bob-0123456789abcdef0123456789abcdef01"
	proxySecret = "proxy-secret-0123456789abcdef0123456789"
)

// An answer is recorded under the identity the listener authenticated: a
// bearer token's name, the login cookie's, a trusted proxy's user; never a
// name the request carries. Without one nothing is answered.
func TestAnswerRecordsIdentity(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	startWorker(t, b)
	tokens, err := httpauth.ParseTokens(strings.NewReader(aliceToken+" alice\n"+bobToken+" bob\n"), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	hs := serveGuarded(t, webui.Config{Bus: b, AllowApprovals: true}, httpauth.Config{Tokens: tokens})
	proxied := serveGuarded(t, webui.Config{Bus: b, AllowApprovals: true}, httpauth.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, ProxySecret: []byte(proxySecret)})
	wait := func() string {
		t.Helper()
		req := &events.RunRequest{RunID: events.NewID(), AgentID: "ops", SessionID: "s-" + events.NewID(), Prompt: "what is 6*7?"}
		if err := runs.New(b).Submit(ctx, req); err != nil {
			t.Fatal(err)
		}
		waitStage(t, ctx, b, req.RunID, events.StageApprovalRequested)
		return req.RunID
	}
	answer := func(c *http.Client, base, run, body string, hdr ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/runs/"+run+"/answer", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", base)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(out)
	}
	resolved := func(run string) *events.ApprovalResolved {
		t.Helper()
		var out *events.ApprovalResolved
		if _, err := b.Replay(ctx, bus.Filter{Run: run, Stages: []events.Stage{events.StageApprovalResolved}}, func(e *events.Event) error {
			out = new(events.ApprovalResolved)
			return e.DecodeData(out)
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	c := http.DefaultClient

	run := wait()
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong-0123456789abcdef"}, {httpauth.HeaderForwardedUser, "the-ciso"}} {
		if code, body := answer(c, hs.URL, run, `{"action":"approve"}`, hdr...); code != http.StatusUnauthorized {
			t.Fatalf("an answer with %v: %d %s, want 401", hdr, code, body)
		}
	}
	if code, body := answer(c, hs.URL, run, `{"action":"approve","by":"the-ciso"}`, "Authorization", "Bearer "+aliceToken); code != http.StatusBadRequest || !strings.Contains(body, `unknown field \"by\"`) {
		t.Fatalf("a self-declared by: %d %s, want 400", code, body)
	}
	if r := resolved(run); r != nil {
		t.Fatalf("refused answers were recorded: %+v", r)
	}
	if code, body := answer(c, hs.URL, run, `{"action":"approve","comment":"I am the CISO"}`, "Authorization", "Bearer "+aliceToken); code != 200 || !strings.Contains(body, `"recorded":true`) {
		t.Fatalf("alice's answer: %d %s", code, body)
	}
	if r := resolved(run); r == nil || r.By != "alice" || r.Comment != "I am the CISO" || r.Action != events.ActionApprove {
		t.Fatalf("alice's answer recorded as %+v", r)
	}

	// Signed in with the form: the cookie's holder.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	res, err := browser.PostForm(hs.URL+"/login", url.Values{"token": {bobToken}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var cfg webui.ConfigView
	res, err = browser.Get(hs.URL + "/api/config")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(res.Body).Decode(&cfg)
	res.Body.Close()
	if cfg.User != "bob" || !cfg.SignedIn {
		t.Fatalf("signed in as %+v", cfg)
	}
	run = wait()
	if code, body := answer(browser, hs.URL, run, `{"action":"reject","reason":"not today"}`); code != 200 {
		t.Fatalf("bob's answer: %d %s", code, body)
	}
	if r := resolved(run); r == nil || r.By != "bob" || r.Action != events.ActionReject {
		t.Fatalf("bob's answer recorded as %+v", r)
	}

	// Behind a trusted proxy on the same machine: a local process that
	// skips the proxy and says X-Forwarded-User answers nothing; the
	// proxy, sending its secret, says who answers.
	run = wait()
	if code, body := answer(c, proxied.URL, run, `{"action":"approve"}`, httpauth.HeaderForwardedUser, "ciso"); code != http.StatusUnauthorized {
		t.Fatalf("an answer as X-Forwarded-User ciso without the proxy's secret: %d %s, want 401", code, body)
	}
	if r := resolved(run); r != nil {
		t.Fatalf("an answer without the proxy's secret was recorded: %+v", r)
	}
	if code, body := answer(c, proxied.URL, run, `{"action":"approve"}`, httpauth.HeaderForwardedUser, "carol", httpauth.HeaderForwardedEmail, "carol@example.com", httpauth.HeaderProxySecret, proxySecret); code != 200 {
		t.Fatalf("carol's answer: %d %s", code, body)
	}
	if r := resolved(run); r == nil || r.By != "carol" {
		t.Fatalf("carol's answer recorded as %+v", r)
	}
}
