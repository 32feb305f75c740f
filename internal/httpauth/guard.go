package httpauth

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The identity headers of an authenticating proxy (oauth2-proxy and
// others), honoured only from a peer of Config.TrustedProxies that sends
// the shared secret in HeaderProxySecret.
const (
	HeaderForwardedUser  = "X-Forwarded-User"
	HeaderForwardedEmail = "X-Forwarded-Email"
	// HeaderProxySecret carries the secret a trusted proxy shares with the
	// listener (Config.ProxySecret): what vouches for the proxy, since any
	// process on the proxy's machine has its address. It never reaches
	// the handler.
	HeaderProxySecret = "X-Hookbus-Proxy-Secret"
)

// Config configures a Guard.
type Config struct {
	// Name names the listener in errors and logs ("observer ui").
	Name string
	// Addr is the address the listener is bound to (required): its port
	// goes with the loopback names, and one that is not loopback needs a
	// way to authenticate (Tokens or TrustedProxies) and a PublicURL.
	Addr net.Addr
	// PublicURLs are the URLs users reach the listener by other than a
	// loopback name (ParsePublicURL): their hosts are served, and their
	// origins may post.
	PublicURLs []*url.URL
	// Tokens are the bearer tokens accepted (Authorization: Bearer TOKEN;
	// with Login also the login form).
	Tokens *Tokens
	// TrustedProxies are the peers whose X-Forwarded-User and
	// X-Forwarded-Email headers say who the caller is, when they send
	// ProxySecret.
	TrustedProxies []netip.Prefix
	// ProxySecret is the secret a trusted proxy sends in
	// HeaderProxySecret (required with TrustedProxies; at least
	// MinSecretLen bytes, ReadSecretFile). It is compared in constant
	// time.
	ProxySecret []byte
	// TLS is set when the listener serves TLS itself (cookies are then
	// Secure, and the loopback origins https).
	TLS bool
	// Login serves a login form at /login that signs a token's holder in
	// with a cookie (and POST /logout), for a browser page.
	Login bool
	// SessionTTL is how long a login lasts (default DefaultSessionTTL).
	SessionTTL time.Duration
	// CookiePath is the path the login cookie is sent for (default "/"):
	// the path a proxy serves the listener under.
	CookiePath string
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Probes are paths served to anyone by GET and HEAD, whatever the
	// Host and without authentication: health probes (/healthz,
	// /readyz), which answer only whether the process is alive and ready
	// and, when not, which check fails. A kubelet's probe sends the pod's
	// address as its Host and no credentials.
	Probes []string
}

// Guard serves a handler only to the hosts, origins and callers its
// Config allows (see the package doc). It is safe for concurrent use.
type Guard struct {
	cfg      Config
	log      *slog.Logger
	hosts    *hosts
	cop      *http.CrossOriginProtection
	sessions *sessions         // nil without Login and tokens
	required bool              // some way to authenticate is configured
	local    string            // the identity of a caller when none is
	secret   [sha256.Size]byte // of ProxySecret
}

// New returns a Guard. It refuses (ErrInvalidConfig) a config without
// Addr, TrustedProxies without a ProxySecret of MinSecretLen bytes, and (ErrUnprotected) a non-loopback Addr with no Tokens nor
// TrustedProxies, or with no PublicURLs.
func New(cfg Config) (*Guard, error) {
	tcp, ok := cfg.Addr.(*net.TCPAddr)
	if !ok || tcp == nil {
		return nil, fmt.Errorf("%w: %s: no TCP listener address", ErrInvalidConfig, cfg.Name)
	}
	g := &Guard{cfg: cfg, log: cfg.Logger, cop: http.NewCrossOriginProtection(), local: LocalName(),
		required: cfg.Tokens.Len() > 0 || len(cfg.TrustedProxies) > 0}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if len(cfg.TrustedProxies) > 0 {
		if len(cfg.ProxySecret) < MinSecretLen {
			return nil, fmt.Errorf("%w: %s: a trusted proxy must send a secret of at least %d bytes in %s (--trusted-proxy-secret-file): its address alone vouches for nothing, any process on its machine has it", ErrInvalidConfig, cfg.Name, MinSecretLen, HeaderProxySecret)
		}
		g.secret = sha256.Sum256(cfg.ProxySecret)
	}
	if !tcp.IP.IsLoopback() {
		if !g.required {
			return nil, fmt.Errorf("%w: %s listens on %s, which is not a loopback address, and has no way to authenticate callers", ErrUnprotected, cfg.Name, tcp)
		}
		if len(cfg.PublicURLs) == 0 {
			return nil, fmt.Errorf("%w: %s listens on %s, which is not a loopback address, and serves no public URL (the host names users reach it by)", ErrUnprotected, cfg.Name, tcp)
		}
	}
	g.hosts = newHosts(tcp.Port, cfg.TLS, cfg.PublicURLs)
	if len(cfg.PublicURLs) == 0 && tcp.IP.To4() == nil && tcp.IP.IsLoopback() {
		g.hosts.first = strings.Replace(g.hosts.first, "127.0.0.1", "[::1]", 1)
	}
	if cfg.Login && cfg.Tokens.Len() > 0 {
		ttl := cfg.SessionTTL
		if ttl <= 0 {
			ttl = DefaultSessionTTL
		}
		s, err := newSessions(ttl, cfg.CookiePath)
		if err != nil {
			return nil, fmt.Errorf("%s: session key: %w", cfg.Name, err)
		}
		g.sessions = s
	}
	return g, nil
}

// URL is where users open the listener: the first public URL, else its
// loopback address.
func (g *Guard) URL() string { return g.hosts.first }

// Wrap returns next behind the guard: next sees only requests to a served
// host, from an allowed origin, by an authenticated caller, whose
// Identity it reads with IdentityOf.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.serve(w, r, next) })
}

func (g *Guard) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && slices.Contains(g.cfg.Probes, r.URL.Path) {
		next.ServeHTTP(w, r)
		return
	}
	if !g.hosts.serves(r.Host) {
		g.log.Warn("httpauth: refused a request for a host this listener does not serve", "listener", g.cfg.Name, "host", r.Host, "peer", r.RemoteAddr)
		g.refuse(w, http.StatusMisdirectedRequest, fmt.Sprintf("this server does not serve the host %q: reach it by a loopback name or a URL it was started with (--public-url)", r.Host))
		return
	}
	if !safeMethod(r.Method) {
		if err := g.cop.Check(r); err != nil {
			g.log.Warn("httpauth: refused a cross-origin request", "listener", g.cfg.Name, "origin", r.Header.Get("Origin"), "peer", r.RemoteAddr)
			g.refuse(w, http.StatusForbidden, "a request from another site is refused")
			return
		}
		// A browser sends Origin "null" for a same-origin form under
		// Referrer-Policy no-referrer; Sec-Fetch-Site, which no page can
		// set, vouches for it.
		o := r.Header.Get("Origin")
		sameOrigin := o == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin"
		if o != "" && !sameOrigin && !g.hosts.origin(o) {
			g.log.Warn("httpauth: refused a request from an origin this listener does not serve", "listener", g.cfg.Name, "origin", o, "peer", r.RemoteAddr)
			g.refuse(w, http.StatusForbidden, fmt.Sprintf("a request from origin %q is refused", o))
			return
		}
	}
	trusted := g.fromTrustedProxy(r)
	if !trusted {
		r.Header.Del(HeaderForwardedUser)
		r.Header.Del(HeaderForwardedEmail)
	}
	if g.sessions != nil {
		switch r.URL.Path {
		case LoginPath:
			g.login(w, r)
			return
		case LogoutPath:
			g.logout(w, r)
			return
		}
	}
	id, err := g.authenticate(r, trusted)
	if err != nil {
		if g.sessions != nil && r.URL.Path == "/" && safeMethod(r.Method) {
			seeOther(w, "login")
			return
		}
		g.log.Warn("httpauth: refused an unauthenticated request", "listener", g.cfg.Name, "path", r.URL.Path, "peer", r.RemoteAddr, "err", err)
		w.Header().Set("WWW-Authenticate", `Bearer realm="hookbus"`)
		g.refuseTo(w, http.StatusUnauthorized, err.Error(), g.sessions != nil)
		return
	}
	next.ServeHTTP(w, r.WithContext(WithIdentity(r.Context(), id)))
}

// errUnauthenticated is why a request is refused with 401.
var errUnauthenticated = errors.New("not signed in")

// authenticate returns who the request comes from: a trusted proxy's
// identity headers, else a bearer token, else the login cookie, else (no
// way to authenticate configured) the local user.
func (g *Guard) authenticate(r *http.Request, trusted bool) (Identity, error) {
	if trusted {
		name := cmp.Or(r.Header.Get(HeaderForwardedUser), r.Header.Get(HeaderForwardedEmail))
		if name != "" {
			if err := checkName(name); err != nil {
				return Identity{}, fmt.Errorf("%w: %s: %v", errUnauthenticated, HeaderForwardedUser, err)
			}
			return Identity{Name: name, Method: MethodProxy}, nil
		}
	}
	if h := r.Header.Get("Authorization"); h != "" && g.cfg.Tokens.Len() > 0 {
		scheme, secret, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return Identity{}, fmt.Errorf("%w: send Authorization: Bearer TOKEN", errUnauthenticated)
		}
		tok, ok := g.cfg.Tokens.Lookup(strings.TrimSpace(secret))
		if !ok {
			return Identity{}, fmt.Errorf("%w: the bearer token is not one of this server's", errUnauthenticated)
		}
		return Identity{Name: tok.Name, Method: MethodToken, Agents: tok.Agents}, nil
	}
	if g.sessions != nil {
		if name, ok := g.sessions.check(r, g.secure(r), time.Now()); ok {
			return Identity{Name: name, Method: MethodSession}, nil
		}
	}
	if !g.required {
		return Identity{Name: g.local, Method: MethodLocal}, nil
	}
	var ways []string
	if g.cfg.Tokens.Len() > 0 {
		ways = append(ways, "send Authorization: Bearer TOKEN")
	}
	if g.sessions != nil {
		ways = append(ways, "sign in at "+LoginPath)
	}
	if len(g.cfg.TrustedProxies) > 0 {
		ways = append(ways, "come through the authenticating proxy")
	}
	return Identity{}, fmt.Errorf("%w: %s", errUnauthenticated, strings.Join(ways, ", or "))
}

// fromTrustedProxy reports whether the request comes from a trusted
// proxy: a peer of TrustedProxies that sends the proxy secret. The
// secret's header is removed either way.
func (g *Guard) fromTrustedProxy(r *http.Request) bool {
	sent, has := r.Header[http.CanonicalHeaderKey(HeaderProxySecret)]
	r.Header.Del(HeaderProxySecret)
	if len(g.cfg.TrustedProxies) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	if !slices.ContainsFunc(g.cfg.TrustedProxies, func(p netip.Prefix) bool { return p.Contains(a) }) {
		return false
	}
	if has && len(sent) == 1 {
		sum := sha256.Sum256([]byte(sent[0]))
		if subtle.ConstantTimeCompare(sum[:], g.secret[:]) == 1 {
			return true
		}
	}
	if r.Header.Get(HeaderForwardedUser) != "" || r.Header.Get(HeaderForwardedEmail) != "" {
		g.log.Warn("httpauth: ignored identity headers from a trusted proxy's address without the proxy secret", "listener", g.cfg.Name, "peer", r.RemoteAddr, "secret_sent", has)
	}
	return false
}

// secure reports whether the browser reached the request over https: TLS
// here, or a public https URL (TLS ended by a proxy in front).
func (g *Guard) secure(r *http.Request) bool { return r.TLS != nil || g.hosts.secure(r.Host) }

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// refuse answers code with {"error": msg}.
func (g *Guard) refuse(w http.ResponseWriter, code int, msg string) { g.refuseTo(w, code, msg, false) }

// refuseTo answers code with {"error": msg}, and with login
// "login": "login", the sign-in form a page goes to.
func (g *Guard) refuseTo(w http.ResponseWriter, code int, msg string, login bool) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	body := struct {
		Error string `json:"error"`
		Login string `json:"login,omitempty"`
	}{Error: msg}
	if login {
		body.Login = "login"
	}
	_ = json.NewEncoder(w).Encode(body)
}

// privateRanges are the networks a trusted proxy's CIDR may span whole:
// loopback, private (RFC 1918, RFC 6598 shared, IPv6 unique local) and
// link-local addresses.
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
}

// Narrowest CIDRs of public addresses a --trusted-proxy may name.
const (
	minPublicBits4 = 24
	minPublicBits6 = 64
)

// ParseTrustedProxy reads a --trusted-proxy: a CIDR (10.0.0.0/8) or one
// address (a /32 or /128). It refuses (ErrInvalidConfig) a CIDR wider than
// the private network it lies in (0.0.0.0/1, 10.0.0.0/7), and one of
// public addresses wider than a /24 (IPv4) or a /64 (IPv6).
func ParseTrustedProxy(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%w: trusted proxy %q: give a CIDR (10.1.2.0/24) or an address", ErrInvalidConfig, s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p = p.Masked()
	if p.Addr().Is4In6() {
		p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
	}
	for _, r := range privateRanges {
		if r.Bits() <= p.Bits() && r.Contains(p.Addr()) {
			return p, nil
		}
	}
	least := minPublicBits4
	if p.Addr().Is6() {
		least = minPublicBits6
	}
	if p.Bits() < least {
		return netip.Prefix{}, fmt.Errorf("%w: trusted proxy %q is too broad: any of its 2^%d addresses could say who the caller is; name the proxy's own address or a CIDR inside one private network (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7), or of public addresses at most a /%d", ErrInvalidConfig, s, p.Addr().BitLen()-p.Bits(), least)
	}
	return p, nil
}

// isLoopback reports whether a listener address is a loopback one.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
