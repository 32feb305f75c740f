package httpauth

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// loopbackNames are the names a loopback caller reaches a listener by.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// hosts is what a listener serves: the Host header values it answers and
// the origins its state-changing requests may come from.
type hosts struct {
	names   map[string]bool // host[:port] as a Host header carries it, lower case
	https   map[string]bool // of names, those reached over https (a public https URL)
	origins map[string]bool // scheme://host[:port] as an Origin header carries it
	first   string          // the first public URL, else a loopback one
}

// newHosts returns the hosts of a listener on port: the loopback names
// (http, https with tls) and the public URLs' hosts.
func newHosts(port int, tls bool, public []*url.URL) *hosts {
	h := &hosts{names: map[string]bool{}, https: map[string]bool{}, origins: map[string]bool{}}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	for _, n := range loopbackNames {
		h.add(scheme, n, strconv.Itoa(port))
	}
	h.first = scheme + "://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/"
	for i, u := range public {
		h.add(u.Scheme, u.Hostname(), u.Port())
		if i == 0 {
			h.first = u.Scheme + "://" + u.Host + "/"
		}
	}
	return h
}

// add serves host on port (the scheme's default when empty): the Host
// header "host:port", and "host" alone when port is the default.
func (h *hosts) add(scheme, host, port string) {
	def := "80"
	if scheme == "https" {
		def = "443"
	}
	port = cmp.Or(port, def)
	host = strings.ToLower(host)
	full := net.JoinHostPort(host, port)
	bare := host
	if strings.Contains(host, ":") {
		bare = "[" + host + "]"
	}
	forms := []string{full}
	if port == def {
		forms = append(forms, bare)
	}
	for _, f := range forms {
		h.names[f] = true
		h.origins[scheme+"://"+f] = true
		if scheme == "https" {
			h.https[f] = true
		}
	}
}

// serves reports whether a request's Host is one of the listener's.
func (h *hosts) serves(host string) bool { return h.names[strings.ToLower(host)] }

// secure reports whether host was reached over https (a public https URL,
// TLS ended by a proxy in front).
func (h *hosts) secure(host string) bool { return h.https[strings.ToLower(host)] }

// origin reports whether an Origin header names one of the served origins.
func (h *hosts) origin(o string) bool { return h.origins[strings.ToLower(o)] }

// ParsePublicURL reads a --public-url: http or https, a host, no user,
// query or fragment. Its path is allowed (a proxy may serve the page
// under one) and plays no part: only the scheme, host and port do.
func ParsePublicURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: public URL %q: %v", ErrInvalidConfig, s, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: public URL %q: give http:// or https://", ErrInvalidConfig, s)
	case u.Hostname() == "":
		return nil, fmt.Errorf("%w: public URL %q names no host", ErrInvalidConfig, s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%w: public URL %q: give scheme://host[:port][/path], no user, query or fragment", ErrInvalidConfig, s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%w: public URL %q: port %q", ErrInvalidConfig, s, p)
		}
	}
	return u, nil
}
