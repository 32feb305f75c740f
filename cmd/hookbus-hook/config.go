package main

import (
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// config is what the command line and the environment say.
type config struct {
	url     *target
	token   string
	policy  string
	timeout time.Duration
}

const usageText = `usage: hookbus-hook [--policy ignore|fail] [--token-file FILE] [--timeout D] [URL]

Posts the hook input on stdin to loop gateway's URL (default $HOOKBUS_GATEWAY_URL) and prints its answer.
  -policy string
    	when the gateway cannot answer: ignore (exit 1, the event proceeds) or fail (exit 2, the call or prompt is blocked) (default "ignore")
  -timeout duration
    	the longest wait for the gateway's answer: above the gateway's --timeout, under the agent's hook timeout (default 35s)
  -token-file string
    	a file holding the gateway's bearer token (default: $HOOKBUS_GATEWAY_TOKEN)
`

// parse reads the command line as package flag would (-name or --name,
// its value after = or as the next argument, flags before the URL) and
// the environment.
func parse(args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	c := &config{policy: "ignore", timeout: 35 * time.Second, token: getenv("HOOKBUS_GATEWAY_TOKEN")}
	tokenFile := ""
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' {
			break
		}
		args = args[1:]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if name == "" || name[0] == '-' || name[0] == '=' {
			_, _ = io.WriteString(stderr, "bad flag syntax: "+a+"\n"+usageText)
			return nil, usageError("bad flag syntax: " + a)
		}
		var dst *string
		var timeout string
		switch name {
		case "policy":
			dst = &c.policy
		case "token-file":
			dst = &tokenFile
		case "timeout":
			dst = &timeout
		case "h", "help":
			_, _ = io.WriteString(stderr, usageText)
			return nil, usageError("flag: help requested")
		default:
			_, _ = io.WriteString(stderr, "flag provided but not defined: -"+name+"\n"+usageText)
			return nil, usageError("flag provided but not defined: -" + name)
		}
		if !hasValue {
			if len(args) == 0 {
				_, _ = io.WriteString(stderr, "flag needs an argument: -"+name+"\n"+usageText)
				return nil, usageError("flag needs an argument: -" + name)
			}
			value, args = args[0], args[1:]
		}
		*dst = value
		if dst == &timeout {
			d, err := time.ParseDuration(value)
			if err != nil {
				_, _ = io.WriteString(stderr, "invalid value "+strconv.Quote(value)+" for flag -timeout: parse error\n"+usageText)
				return nil, usageError("invalid value " + strconv.Quote(value) + " for flag -timeout: parse error")
			}
			c.timeout = d
		}
	}
	raw := getenv("HOOKBUS_GATEWAY_URL")
	switch len(args) {
	case 0:
	case 1:
		raw = args[0]
	default:
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = strconv.Quote(a)
		}
		return nil, usageError("one URL, not [" + strings.Join(q, " ") + "]")
	}
	if raw == "" {
		return nil, usageError("give the gateway's URL (http://HOST:PORT/ROUTE) or set $HOOKBUS_GATEWAY_URL")
	}
	u, err := parseTarget(raw)
	if err != nil {
		return nil, usageError(strconv.Quote(raw) + " is not an http:// URL (hookbus-hook speaks plain HTTP, to a gateway on loopback or a trusted network; over https use loop agent-hook)")
	}
	c.url = u
	if c.policy != "ignore" && c.policy != "fail" {
		return nil, usageError("--policy " + strconv.Quote(c.policy) + ": give ignore or fail")
	}
	if c.timeout <= 0 {
		return nil, usageError("--timeout " + c.timeout.String() + ": give a positive duration")
	}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, usageError("--token-file: " + err.Error())
		}
		c.token = strings.TrimSpace(string(b))
	}
	return c, nil
}

// target is the gateway's URL,
// http://[USER[:PASSWORD]@]HOST[:PORT][/PATH][?QUERY][#FRAGMENT]; the user
// and the fragment are not sent.
type target struct {
	redacted string // the URL with its password hidden, for messages
	host     string // HOST[:PORT], the Host header
	addr     string // HOST:PORT to connect to (port 80 when none is given)
	uri      string // the request's target: PATH[?QUERY], "/" when there is none
}

// parseTarget reads raw as net/url reads an http URL, where it reads it at
// all: it refuses what net/url refuses (another scheme, no host, a port
// that is not a number, a bad %-escape) and more (a byte outside printable
// ASCII, a host that is not a name or an address, an IPv6 zone, a path
// net/url would escape), so that what it sends is what net/url's reading
// would have sent.
func parseTarget(raw string) (*target, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !strings.EqualFold(scheme, "http") {
		return nil, errNotHTTP
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] >= 0x7f {
			return nil, errNotHTTP
		}
	}
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	path, fragment, _ := strings.Cut(path, "#")
	if !escaped(fragment) {
		return nil, errNotHTTP
	}
	// The path as net/url sends it unchanged; the query it sends as given.
	if p, _, _ := strings.Cut(path, "?"); !only(p, "-._~!$&'()*+,;=:@[]/%") || !escaped(p) {
		return nil, errNotHTTP
	}
	t := &target{redacted: raw}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo := authority[:i]
		if !only(userinfo, "-._:~!$&'()*+,;=%@") || !escaped(userinfo) {
			return nil, errNotHTTP
		}
		if user, _, hasPassword := strings.Cut(userinfo, ":"); hasPassword {
			t.redacted = scheme + "://" + user + ":xxxxx@" + authority[i+1:] + rest[len(authority):]
		}
		authority = authority[i+1:]
	}
	host, port := authority, ""
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return nil, errNotHTTP
		}
		if ip, err := netip.ParseAddr(authority[1:end]); err != nil || !ip.Is6() || ip.Zone() != "" {
			return nil, errNotHTTP
		}
		host, port = authority[:end+1], authority[end+1:]
		if port != "" && port[0] != ':' {
			return nil, errNotHTTP
		}
	} else if i := strings.LastIndexByte(authority, ':'); i >= 0 {
		host, port = authority[:i], authority[i:]
	}
	port = strings.TrimPrefix(port, ":")
	if strings.Trim(port, "0123456789") != "" || (!strings.HasPrefix(host, "[") && !only(host, "-._~")) {
		return nil, errNotHTTP
	}
	if host == "" || host == "[]" {
		return nil, errNotHTTP
	}
	if port == "" {
		port = "80"
	}
	t.host, t.addr, t.uri = authority, host+":"+port, path
	if t.uri == "" || t.uri[0] == '?' {
		t.uri = "/" + t.uri
	}
	return t, nil
}

// only reports whether s holds nothing but ASCII letters, digits and the
// bytes of also.
func only(s, also string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(also, c) >= 0) {
			return false
		}
	}
	return true
}

// escaped reports whether every % of s starts a %-escape (two hex digits).
func escaped(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		if i+2 >= len(s) || !ishex(s[i+1]) || !ishex(s[i+2]) {
			return false
		}
	}
	return true
}

func ishex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
