package httpauth

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Flags are the flags of one HTTP listener: the names it serves, how its
// callers authenticate, and its TLS key pair.
type Flags struct {
	// Prefix goes before every flag name: "metrics-" gives
	// --metrics-token-file and --metrics-tls-cert. Without one, the TLS
	// pair is --http-tls-cert and --http-tls-key (--tls-cert and
	// --tls-key are the NATS connection's client certificate).
	Prefix string
	// Proxies registers --trusted-proxy (a page behind an authenticating
	// proxy); a listener for programs leaves it off.
	Proxies bool
	// Login registers --session-ttl (a page's login cookie).
	Login bool
	// TokenEnv names an environment variable that may hold one more token
	// (HOOKBUS_GATEWAY_TOKEN), bound to no agent.
	TokenEnv string

	publicURLs  []string
	tokenFile   string
	proxies     []string
	proxySecret string
	sessionTTL  time.Duration
	cert, key   string
}

// Register defines the flags on fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.Func(f.Prefix+"public-url", "a URL users reach this listener by, other than localhost (https://hookbus.example.com): its host is served, any other Host is refused (421); repeatable, required off loopback", func(v string) error {
		f.publicURLs = append(f.publicURLs, v)
		return nil
	})
	tokenHelp := "a file of bearer tokens, one a line: TOKEN [NAME] [agents=ID,ID] (docs/SECURITY.md); callers then send Authorization: Bearer TOKEN"
	if f.TokenEnv != "" {
		tokenHelp += "; $" + f.TokenEnv + " may hold one more"
	}
	fs.StringVar(&f.tokenFile, f.Prefix+"token-file", "", tokenHelp)
	if f.Proxies {
		fs.Func(f.Prefix+"trusted-proxy", "an authenticating proxy's address or CIDR whose X-Forwarded-User / X-Forwarded-Email say who the caller is (oauth2-proxy), when it sends the secret of --"+f.Prefix+"trusted-proxy-secret-file; repeatable; from any other peer, or without the secret, those headers are ignored", func(v string) error {
			f.proxies = append(f.proxies, v)
			return nil
		})
		fs.StringVar(&f.proxySecret, f.Prefix+"trusted-proxy-secret-file", "", "a file holding the secret (at least 32 bytes, mode 0600) the trusted proxy sends in the "+HeaderProxySecret+" header; required with --"+f.Prefix+"trusted-proxy")
	}
	if f.Login {
		fs.DurationVar(&f.sessionTTL, f.Prefix+"session-ttl", DefaultSessionTTL, "how long a sign-in lasts (signing out ends it at once)")
	}
	fs.StringVar(&f.cert, f.tlsPrefix()+"tls-cert", "", "serve HTTPS with this certificate (PEM; with --"+f.tlsPrefix()+"tls-key)")
	fs.StringVar(&f.key, f.tlsPrefix()+"tls-key", "", "the HTTPS certificate's private key (PEM)")
}

// tlsPrefix goes before the TLS flags' names: Prefix, else "http-".
func (f *Flags) tlsPrefix() string {
	if f.Prefix == "" {
		return "http-"
	}
	return f.Prefix
}

// Options are what a command adds to its Flags when it listens.
type Options struct {
	// Name names the listener in errors and logs ("observer ui").
	Name string
	// Login serves the page's login form (Config.Login).
	Login bool
	// Logger defaults to discarding.
	Logger *slog.Logger
	// ReadHeaderTimeout bounds reading a request's headers (default 10 s):
	// a connection that sends them slower is closed.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included (default:
	// headers only). A handler may set its own deadlines
	// (http.ResponseController).
	ReadTimeout time.Duration
	// ShutdownTimeout bounds the graceful stop when Serve's ctx ends
	// (default 5 s).
	ShutdownTimeout time.Duration
	// Drain lets the requests in flight when Serve's ctx ends finish
	// (within ShutdownTimeout); without it their contexts end with ctx
	// (live streams stop at once).
	Drain bool
	// Probes are health probe paths anyone may GET (Config.Probes).
	Probes []string
}

// config reads the flags: the tokens, proxies, public URLs and TLS key
// pair, each error naming its flag.
func (f *Flags) config(o Options) (Config, *tls.Config, error) {
	cfg := Config{Name: o.Name, Login: o.Login, Logger: o.Logger, Probes: o.Probes, SessionTTL: f.sessionTTL}
	if f.Login && f.sessionTTL <= 0 {
		return cfg, nil, fmt.Errorf("%w: --%ssession-ttl %s: give a positive duration", ErrInvalidConfig, f.Prefix, f.sessionTTL)
	}
	for _, v := range f.publicURLs {
		u, err := ParsePublicURL(v)
		if err != nil {
			return cfg, nil, fmt.Errorf("--%spublic-url: %w", f.Prefix, err)
		}
		cfg.PublicURLs = append(cfg.PublicURLs, u)
	}
	cfg.CookiePath = cookiePath(cfg.PublicURLs)
	for _, v := range f.proxies {
		p, err := ParseTrustedProxy(v)
		if err != nil {
			return cfg, nil, fmt.Errorf("--%strusted-proxy: %w", f.Prefix, err)
		}
		cfg.TrustedProxies = append(cfg.TrustedProxies, p)
	}
	switch {
	case len(f.proxies) > 0 && f.proxySecret == "":
		return cfg, nil, fmt.Errorf("%w: --%strusted-proxy needs --%strusted-proxy-secret-file FILE, the secret the proxy sends in %s: a proxy's address alone vouches for nothing, since any process on its machine can connect from it", ErrInvalidConfig, f.Prefix, f.Prefix, HeaderProxySecret)
	case f.proxySecret != "" && len(f.proxies) == 0:
		return cfg, nil, fmt.Errorf("%w: --%strusted-proxy-secret-file without --%strusted-proxy ADDRESS", ErrInvalidConfig, f.Prefix, f.Prefix)
	case f.proxySecret != "":
		sec, err := ReadSecretFile(f.proxySecret)
		if err != nil {
			return cfg, nil, fmt.Errorf("--%strusted-proxy-secret-file: %w", f.Prefix, err)
		}
		cfg.ProxySecret = sec
	}
	if f.tokenFile != "" {
		t, err := LoadTokens(f.tokenFile)
		if err != nil {
			return cfg, nil, fmt.Errorf("--%stoken-file: %w", f.Prefix, err)
		}
		cfg.Tokens = t
	}
	if f.TokenEnv != "" {
		if v := os.Getenv(f.TokenEnv); v != "" {
			if cfg.Tokens == nil {
				cfg.Tokens = &Tokens{}
			}
			if err := cfg.Tokens.Add(v, Token{Name: strings.ToLower(f.TokenEnv)}); err != nil {
				return cfg, nil, fmt.Errorf("$%s: %w", f.TokenEnv, err)
			}
		}
	}
	if (f.cert == "") != (f.key == "") {
		return cfg, nil, fmt.Errorf("%w: give both --%stls-cert and --%stls-key, or neither", ErrInvalidConfig, f.tlsPrefix(), f.tlsPrefix())
	}
	if f.cert == "" {
		return cfg, nil, nil
	}
	pair, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return cfg, nil, fmt.Errorf("%w: --%stls-cert / --%stls-key: %v", ErrInvalidConfig, f.tlsPrefix(), f.tlsPrefix(), err)
	}
	cfg.TLS = true
	return cfg, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// Listen reads the flags and opens addr. It refuses, naming the flags to
// give (ErrUnprotected), an address that is not loopback when no token
// file (nor, with Proxies, trusted proxy) or no public URL is given; and
// any flag it cannot read (ErrInvalidConfig).
func (f *Flags) Listen(addr string, o Options) (*Listener, error) {
	cfg, tlsCfg, err := f.config(o)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s on %s: %v", ErrInvalidConfig, o.Name, addr, err)
	}
	cfg.Addr = ln.Addr()
	if !isLoopback(cfg.Addr) {
		var missing []string
		if cfg.Tokens.Len() == 0 && len(cfg.TrustedProxies) == 0 {
			auth := "--" + f.Prefix + "token-file FILE"
			if f.TokenEnv != "" {
				auth += " (or $" + f.TokenEnv + ")"
			}
			if f.Proxies {
				auth += " or --" + f.Prefix + "trusted-proxy CIDR"
			}
			missing = append(missing, "a way to authenticate callers: "+auth)
		}
		if len(cfg.PublicURLs) == 0 {
			missing = append(missing, "the URL users reach it by: --"+f.Prefix+"public-url URL")
		}
		if len(missing) > 0 {
			ln.Close()
			return nil, fmt.Errorf("%w: %s on %s is not on loopback (127.0.0.1, [::1]): give %s; or listen on 127.0.0.1", ErrUnprotected, o.Name, addr, strings.Join(missing, ", and "))
		}
	}
	g, err := New(cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	return &Listener{ln: ln, guard: g, opts: o}, nil
}

// Listener is an open listener whose requests pass a Guard.
type Listener struct {
	ln    net.Listener
	guard *Guard
	opts  Options
}

// URL is where users open it (Guard.URL).
func (l *Listener) URL() string { return l.guard.URL() }

// Addr is the address it listens on.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close closes a listener that will not Serve.
func (l *Listener) Close() error { return l.ln.Close() }

// Serve serves h behind the guard until ctx ends, then shuts down
// gracefully (Options.ShutdownTimeout). It returns nil after a shutdown,
// else why the server stopped.
func (l *Listener) Serve(ctx context.Context, h http.Handler) error {
	base := ctx
	if l.opts.Drain {
		base = context.WithoutCancel(ctx)
	}
	header := l.opts.ReadHeaderTimeout
	if header <= 0 {
		header = 10 * time.Second
	}
	srv := &http.Server{
		Handler:           l.guard.Wrap(h),
		ReadHeaderTimeout: header,
		ReadTimeout:       l.opts.ReadTimeout,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(l.guard.log.Handler(), slog.LevelDebug),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l.ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	timeout := l.opts.ShutdownTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// cookiePath is the path the public URLs share, where a proxy serves the
// listener under one ("/hookbus/"); "/" otherwise.
func cookiePath(public []*url.URL) string {
	p := ""
	for _, u := range public {
		q := u.EscapedPath()
		if !strings.HasSuffix(q, "/") {
			q += "/"
		}
		if p != "" && p != q {
			return "/"
		}
		p = q
	}
	if p == "" {
		return "/"
	}
	return p
}
