package main

import (
	"flag"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

// reference is the gateway's URL as net/url reads it, the reference
// parseTarget is held to; nil when net/url refuses it or it is not an
// http URL with a host.
func reference(raw string) *target {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return &target{host: u.Host, addr: net.JoinHostPort(u.Hostname(), port), uri: u.RequestURI()}
}

// agrees reports why parseTarget's reading of raw is not net/url's: ""
// when it refuses raw, or reads it as net/url does.
func agrees(raw string) string {
	got, err := parseTarget(raw)
	if err != nil {
		return ""
	}
	want := reference(raw)
	if want == nil {
		return "net/url refuses it"
	}
	if got.host != want.host || got.addr != want.addr || got.uri != want.uri {
		return "net/url reads host " + want.host + ", address " + want.addr + ", target " + want.uri +
			"; got " + got.host + ", " + got.addr + ", " + got.uri
	}
	if u, _ := url.Parse(raw); u != nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" && strings.Contains(got.redacted, ":"+p+"@") {
			return "the password is in " + got.redacted
		}
	}
	return ""
}

// parseTarget reads the gateway URLs people give as net/url does, hides
// their password in messages, and refuses what net/url refuses.
func TestTarget(t *testing.T) {
	for _, raw := range []string{
		"http://127.0.0.1:9466/gemini-cli",
		"http://127.0.0.1:9466/gemini-cli/ci-bot",
		"http://localhost/codex-cli",
		"HTTP://gw.example.com:80/x?y=1#frag",
		"http://[::1]:9466/claude-code",
		"http://[::1]/claude-code",
		"http://alice:secret@10.0.0.5:9466/codex-cli",
		"http://alice@10.0.0.5:9466/codex-cli",
		"http://h:1",
		"http://h:1?q",
		"http://h/a%20b",
	} {
		if _, err := parseTarget(raw); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
		if why := agrees(raw); why != "" {
			t.Errorf("%q: %s", raw, why)
		}
	}
	for _, raw := range []string{
		"https://gw.example.com/codex-cli", "http:///x", "http://h:x/y", "http://[::1/x", "http://h/%zz",
		"http://a b/x", "http://h/a b", "http://h/caf\u00e9", "gw:9466/x", "",
	} {
		if got, err := parseTarget(raw); err == nil {
			t.Errorf("%q: read as %+v", raw, got)
		}
	}
	if got, _ := parseTarget("http://alice:secret@10.0.0.5:9466/codex-cli"); got.redacted != "http://alice:xxxxx@10.0.0.5:9466/codex-cli" {
		t.Errorf("redacted %q", got.redacted)
	}
}

func FuzzTarget(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:9466/gemini-cli", "http://u:p@[::1]:1/a?b#c", "http://h/%41", "http://h:/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if why := agrees(raw); why != "" {
			t.Errorf("%q: %s", raw, why)
		}
	})
}

// The command line is read as package flag reads it: the same values, the
// same URL, the same errors.
func TestFlags(t *testing.T) {
	env := func(string) string { return "" }
	for _, args := range [][]string{
		{"http://h/x"},
		{"--policy", "fail", "http://h/x"},
		{"-policy=fail", "-timeout=2s", "http://h/x"},
		{"--timeout", "1m", "--policy=ignore", "http://h/x"},
		{"--", "http://h/x"},
		{"-", "http://h/x"},
		{"http://h/x", "--policy", "fail"},
		{"--policy"},
		{"--timeout", "soon", "http://h/x"},
		{"--bogus", "http://h/x"},
		{"-h"},
		{"--help"},
		{"---policy", "fail"},
		{"-=x"},
		{"--policy=", "http://h/x"},
	} {
		ref := flag.NewFlagSet("hookbus-hook", flag.ContinueOnError)
		ref.SetOutput(io.Discard)
		policy := ref.String("policy", "ignore", "")
		ref.String("token-file", "", "")
		timeout := ref.Duration("timeout", 35*time.Second, "")
		refErr := ref.Parse(args)

		var stderr strings.Builder
		c, err := parse(args, env, &stderr)
		switch {
		case refErr != nil:
			if err == nil || !strings.Contains(err.Error(), refErr.Error()) || !strings.Contains(stderr.String(), "usage: hookbus-hook") {
				t.Errorf("%q: got %v, want flag's %v and the usage", args, err, refErr)
			}
		case ref.NArg() != 1:
			if err == nil || !strings.Contains(err.Error(), "one URL") {
				t.Errorf("%q: got %v, want one URL", args, err)
			}
		case err != nil:
			if *policy == "ignore" || *policy == "fail" {
				t.Errorf("%q: %v", args, err)
			}
		case c.policy != *policy || c.timeout != *timeout || c.url.uri != "/x":
			t.Errorf("%q: got %s %s %s, flag reads %s %s %s", args, c.policy, c.timeout, c.url.uri, *policy, *timeout, ref.Arg(0))
		}
	}
}
