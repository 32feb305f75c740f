package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/redact"
	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
)

// DefaultStore is the embedded server's store directory when neither --nats
// nor --store is given to a command that can embed.
const DefaultStore = ".hookbus"

// DefaultListen is where the embedded server listens for other processes.
const DefaultListen = "127.0.0.1:4222"

// DefaultURL is the server a command that cannot embed connects to by
// default: the embedded server's listener.
const DefaultURL = "nats://" + DefaultListen

// ConnFlags are the flags that say which NATS server to use.
type ConnFlags struct {
	// App is the command's binary: its --config file, its logs and the
	// stream the command says which bus it uses on (nil: none said).
	App *App
	// Quiet keeps the App's stderr for errors only: no line saying which
	// bus, no outage reports (a coding agent's hook, whose stderr the agent
	// shows its user).
	Quiet    bool
	NATS     string
	Store    string
	Listen   string
	Prefix   string
	Replicas int
	// Context is --context: a NATS context of the nats CLI (NATSContext).
	Context string
	// Embedded is --embedded: start an embedded server on --store
	// (default ./.hookbus).
	Embedded bool
	Auth     Credentials
	// Outage is how long publishes wait out NATS being away (loop
	// commands; 0: the bus' default).
	Outage time.Duration
	// Embeds is set for commands that start an embedded server when given
	// --store DIR or --embedded (loop run, compact, serve, server).
	Embeds bool
	// Attach is set for loop run and compact: given no bus, they use the
	// server listening at DefaultURL; when their embedded server's listen
	// address is held by a server, they attach to it. Both say so.
	Attach bool
	// NeedsBus is set for long-running commands (loop serve, loop
	// gateway): given no bus, they refuse to start.
	NeedsBus bool
	// Await is set for long-running commands (loop serve, loop gateway,
	// observer ui, observer checkpointer): at start, they wait out
	// JetStream being unavailable (an election, a node away), saying so,
	// up to the outage bound (Conn.Await).
	Await bool
	// EmbeddedOnly is set for loop server: no --nats nor credentials.
	EmbeddedOnly bool
	// DefaultURL is the server of commands that cannot embed when given
	// neither --nats, --store nor $NATS_URL (default: DefaultURL).
	DefaultURL string
	// StoreFallback makes a command that cannot embed read and write
	// ./.hookbus (DefaultStore) when no server listens at DefaultURL and
	// that directory exists (observer replay, hooks, provision).
	StoreFallback bool

	fs *pflag.FlagSet // the flags registered, to tell given from defaults
}

// Register adds the flags to fs.
func (c *ConnFlags) Register(fs *pflag.FlagSet) {
	c.fs = fs
	if !c.EmbeddedOnly {
		fs.StringVar(&c.NATS, "nats", "", "NATS server URL(s), comma-separated (nats://host:4222, tls://host:4222); default: $NATS_URL, else the --context's, else "+c.defaultDesc())
		fs.StringVar(&c.Context, "context", "", "a NATS context of the nats CLI (its name, or a context file): its servers, credentials and TLS files (nats context add NAME ...); default $"+NATSContextEnv+", else the config file's")
		c.Auth.register(fs)
	}
	switch {
	case c.EmbeddedOnly:
		fs.StringVar(&c.Store, "store", "", "store directory of the embedded server (default "+DefaultStore+")")
		fs.StringVar(&c.Listen, "listen", DefaultListen, "address the embedded server listens on for other processes")
	case c.Embeds:
		fs.StringVar(&c.Store, "store", "", "run on an embedded server (NATS in this process) whose store is this directory, created if missing")
		fs.BoolVar(&c.Embedded, "embedded", false, "run on an embedded server on --store, default ./"+DefaultStore+" (a single node: its data is only as safe as that directory)")
		fs.StringVar(&c.Listen, "listen", DefaultListen, "address the embedded server listens on for other processes (\"none\": in-process only)")
	default:
		fs.StringVar(&c.Store, "store", "", "a hookbus store directory to open, with no server running on it (see the default of --nats)")
	}
	if c.Embeds && !c.EmbeddedOnly {
		fs.DurationVar(&c.Outage, "outage", bus.DefaultOutageWait, "how long a run waits out NATS being away (saying so on stderr) before its attempt stops (its request goes back to the queue; the run is not failed)")
	}
	fs.StringVar(&c.Prefix, "prefix", events.DefaultPrefix, "subject prefix (when not given: the config file's, else this default)")
	fs.IntVar(&c.Replicas, "replicas", 1, "stream and bucket replicas when provisioning, 3 on a cluster (when not given: the config file's, else this default)")
}

// startWait is how long the command waits out JetStream being unavailable
// at start (Conn.Await): --outage, else bus.DefaultOutageWait.
func (c *ConnFlags) startWait() time.Duration {
	if d := c.outage(); d > 0 {
		return d
	}
	return bus.DefaultOutageWait
}

// outage is how long the command's appends wait out an outage: --outage,
// the bus' default for commands that run agents, 0 for the others.
func (c *ConnFlags) outage() time.Duration {
	switch {
	case c.Outage > 0:
		return c.Outage
	case c.Embeds && !c.EmbeddedOnly:
		return bus.DefaultOutageWait
	}
	return 0
}

// given reports whether the flag name was given on the command line.
func (c *ConnFlags) given(name string) bool {
	return c.fs != nil && c.fs.Changed(name)
}

func (c *ConnFlags) defaultURL() string {
	if c.DefaultURL != "" {
		return c.DefaultURL
	}
	return DefaultURL
}

func (c *ConnFlags) defaultDesc() string {
	switch {
	case c.NeedsBus:
		return "none: give one, or --embedded"
	case c.Attach:
		return c.defaultURL() + " when a server listens there"
	case c.StoreFallback:
		return c.defaultURL() + " when a server listens there, else ./" + DefaultStore + " when it exists"
	}
	return c.defaultURL()
}

// Conn is an open, provisioned bus, with the embedded server behind it if
// any.
type Conn struct {
	Bus      *bus.Bus
	NC       *nats.Conn
	Embedded *embedded.Server
	// Where says what the command is connected to: a server URL (its
	// credentials masked) or "store DIR".
	Where  string
	denied *denials
	// outage bounds Await; say reports on the command's stderr.
	outage time.Duration
	say    func(format string, args ...any)
	// attached says why a command that would embed a server attached to
	// a running one instead ("" when it did not).
	attached string
}

// Close flushes and closes the connection and stops the embedded server.
func (c *Conn) Close() {
	if c.NC != nil {
		_ = c.NC.FlushTimeout(5 * time.Second)
		c.NC.Close()
	}
	if c.Embedded != nil {
		c.Embedded.Shutdown()
	}
}

// Mode says how a command uses the bus.
type Mode int

const (
	// Provision creates or updates the streams and buckets that are
	// missing (the loop; observer hooks writing into a store).
	Provision Mode = iota
	// ReadOnly only uses what is there (observers, auditors, loop submit).
	ReadOnly
	// ProvisionStore is Provision on a store directory and ReadOnly on a
	// server, where an operator provisions (observer hooks).
	ProvisionStore
)

// Open connects (or starts the embedded server, or opens a store); in
// Provision mode it also creates the streams and buckets that are missing.
// A store given to a command that cannot embed must hold a hookbus store
// already (embedded.ErrNoStore otherwise), whether the command reads or
// writes. With an App, it says on the App's stderr, in one line, which bus
// the command uses and why.
func (c *ConnFlags) Open(ctx context.Context, name string, logger *slog.Logger, mode Mode) (*Conn, error) {
	target, err := c.resolve(os.Getenv)
	if err != nil {
		return nil, err
	}
	opts := []bus.Option{bus.WithLogger(logger)}
	if c.Prefix != "" {
		opts = append(opts, bus.WithPrefix(c.Prefix))
	}
	if c.Replicas > 0 {
		opts = append(opts, bus.WithReplicas(c.Replicas))
	}
	if c.Outage > 0 {
		opts = append(opts, bus.WithPublishRetry(bus.DefaultAckTimeout, c.Outage))
	}
	out := &Conn{denied: &denials{}, outage: c.startWait(), say: func(string, ...any) {}}
	if c.App != nil && !c.Quiet {
		path := CommandPath(ctx, c.App.Name)
		out.say = func(format string, args ...any) { c.App.Log.Say(c.App.Err, path+": "+format, args...) }
	}
	natsOpts := []nats.Option{nats.Name(name), nats.ErrorHandler(out.denied.handler(logger))}
	if target.store != "" {
		out.Where = "store " + target.store
		if err := c.openStore(ctx, target, logger, out, natsOpts, opts); err != nil {
			return nil, err
		}
	} else {
		auth := c.Auth.fromEnv(os.Getenv)
		if target.context != nil {
			auth = auth.withContext(target.context.credentials())
			natsOpts = append(natsOpts, target.context.options()...)
		}
		authOpts, err := auth.options(target.url)
		if err != nil {
			return nil, err
		}
		if c.App != nil && !c.Quiet {
			natsOpts = append(natsOpts, newOutageReporter(out.say, redact.URL(target.url), c.outage()).options()...)
		}
		nc, err := bus.Connect(target.url, append(natsOpts, authOpts...)...)
		if err != nil {
			switch {
			case target.byDefault:
				err = fmt.Errorf("%w (no server listens at %s: start one with \"loop server\", or give --nats URL)", err, target.url)
			case errors.Is(err, nats.ErrNoServers):
				err = fmt.Errorf("%w (no server answers at %s: start one there, \"loop server --listen HOST:PORT\" for a development bus, or give --nats the address of yours)", err, redact.URL(target.url))
			case errors.Is(err, nats.ErrAuthorization) && auth.empty() && !strings.Contains(target.url, "@"):
				err = fmt.Errorf("%w (the server at %s wants credentials and none were given: set them with --creds, --nkey, --user and --password, or --token, or $NATS_CREDS, $NATS_USER/$NATS_PASSWORD, ...; or a NATS context, --context)", err, redact.URL(target.url))
			case errors.Is(err, nats.ErrAuthorization):
				err = fmt.Errorf("%w (the server at %s refused the credentials given: check them (--creds, --nkey, --user and --password, --token, the URL's user, or the NATS context), or the server's users)", err, redact.URL(target.url))
			}
			if target.context != nil {
				err = fmt.Errorf("%w (NATS context %s, %s)", err, target.context.Name, target.context.Path)
			}
			return nil, err
		}
		out.NC = nc
		out.Where = nc.ConnectedUrlRedacted()
	}
	c.announce(ctx, out, target)
	b, err := bus.New(out.NC, opts...)
	if err != nil {
		out.Close()
		return nil, err
	}
	out.Bus = b
	pctx, stop := out.Guard(ctx)
	defer stop()
	if c.Await && target.store == "" {
		err := out.Await(pctx, "start", func(ctx context.Context) error {
			_, err := b.JetStream().AccountInfo(ctx)
			return err
		})
		if err != nil {
			out.Close()
			return nil, out.Explain(fmt.Errorf("JetStream: %w", err))
		}
	}
	if mode == ReadOnly || mode == ProvisionStore && target.store == "" {
		return out, nil
	}
	err = out.Await(pctx, "check the streams and buckets", func(ctx context.Context) error { return provisionMissing(ctx, b) })
	if err != nil {
		out.Close()
		return nil, out.Explain(err)
	}
	return out, nil
}

// openStore starts the embedded server on target's store (commands that
// embed) or opens a stopped store (the others), and connects out to it
// in-process. A command that attaches (loop run) connects instead to the
// server that holds the listen address or the store, when one answers
// there.
func (c *ConnFlags) openStore(ctx context.Context, target target, logger *slog.Logger, out *Conn, natsOpts []nats.Option, busOpts []bus.Option) error {
	var err error
	listen := c.Listen
	if listen == "none" {
		listen = ""
	}
	if c.Embeds {
		out.Embedded, err = embedded.Start(ctx, embedded.Config{StoreDir: target.store, Listen: listen, Logger: logger})
		if (errors.Is(err, embedded.ErrAddrInUse) || errors.Is(err, embedded.ErrStoreLocked)) && c.Attach && listen != "" {
			url := "nats://" + listen
			nc, cerr := bus.Connect(url, natsOpts...)
			if cerr == nil {
				if perr := hookbusBus(ctx, nc, busOpts); perr != nil {
					nc.Close()
					return fmt.Errorf("a NATS server listens on %s, but it is not a hookbus bus (%v): give this command another --listen (make run LISTEN=127.0.0.1:4223), or, if that server is yours, provision it first (observer provision --nats %s)", listen, perr, url)
				}
				out.NC, out.Embedded, out.Where = nc, nil, nc.ConnectedUrlRedacted()
				out.attached = fmt.Sprintf("a server already listens on %s: attached to it instead of starting one on --store %s", listen, target.store)
				return nil
			}
			if errors.Is(err, embedded.ErrAddrInUse) {
				return fmt.Errorf("%w (something that is not a NATS server listens there (%v): give this command another --listen, e.g. make run LISTEN=127.0.0.1:4223, or --listen none)", err, cerr)
			}
		}
		if errors.Is(err, embedded.ErrAddrInUse) {
			err = fmt.Errorf("%w (another server listens there: attach to it with --nats nats://%s, or give this one another --listen, or --listen none)", err, listen)
		}
	} else if err = isStore(target.store); err == nil {
		out.Embedded, err = embedded.OpenStore(ctx, target.store)
	}
	if errors.Is(err, embedded.ErrStoreLocked) {
		err = fmt.Errorf("%w (a server runs on it, e.g. loop server: attach to that server with --nats URL)", err)
	}
	if err != nil {
		return err
	}
	if out.NC, err = out.Embedded.Connect(natsOpts...); err != nil {
		out.Close()
		return err
	}
	return nil
}

// hookbusBus checks that the server nc reaches holds a provisioned hookbus
// bus (of opts' prefix), so that a command does not provision
// hookbus' streams into somebody else's server.
func hookbusBus(ctx context.Context, nc *nats.Conn, opts []bus.Option) error {
	b, err := bus.New(nc, opts...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return b.CheckProvisioned(ctx)
}

// announce says on the App's stderr which bus the command uses, and why.
func (c *ConnFlags) announce(ctx context.Context, out *Conn, t target) {
	if c.App == nil || c.Quiet {
		return
	}
	line := "bus " + out.Where
	switch {
	case out.attached != "":
		line += " (" + out.attached + ")"
	case out.Embedded != nil && c.Embeds:
		line = "bus: an embedded server on store " + t.store
		if url := out.Embedded.ClientURL(); url != "" {
			line += " (other processes attach with --nats " + url + ")"
		} else {
			line += " (in this process only)"
		}
	case t.store != "":
		line += " (offline: no server runs on it)"
		if t.fallback {
			line += "; nothing listens at " + c.defaultURL()
		}
	case t.context != nil:
		line += " (NATS context " + t.context.Name + ")"
	case t.byDefault:
		line += " (the default: a server listens there)"
	}
	if c.Prefix != "" && c.Prefix != events.DefaultPrefix {
		line += ", prefix " + c.Prefix
	}
	if t.config != "" {
		line += ", config " + t.config
	}
	c.App.Log.Say(c.App.Err, "%s: %s", CommandPath(ctx, c.App.Name), line)
}

// provisionMissing creates only what is missing: a least-privileged user
// (the loop's in deploy/nats) may read stream information but not create or
// update streams, which an operator provisions (observer provision).
func provisionMissing(ctx context.Context, b *bus.Bus) error {
	err := b.CheckProvisioned(ctx)
	if err == nil || !errors.Is(err, bus.ErrNotProvisioned) {
		return err
	}
	if perr := b.Provision(ctx); perr != nil {
		return fmt.Errorf("%w; creating them failed: %w (an operator can create them with \"observer provision\")", err, perr)
	}
	return nil
}

// target is where Open goes: a server URL or a store directory.
type target struct {
	url, store string
	byDefault  bool         // url is the default, not given
	fallback   bool         // store is ./.hookbus because nothing listens at the default URL
	context    *NATSContext // the NATS context, if any
	config     string       // the config file read, if any
}

// resolve applies the rule of the flags' help: --nats or --context (their
// URL: --nats, else $NATS_URL, else the context's), else --store or
// --embedded, else $NATS_URL or a context named by $NATS_CONTEXT or the
// config file, else the default server (commands that attach, and those
// that cannot embed), else (StoreFallback) ./.hookbus. It also fills
// --prefix, --replicas and --outage from the config file where they were
// not given.
func (c *ConnFlags) resolve(getenv func(string) string) (target, error) {
	var t target
	explicitStore := c.Store != ""
	switch {
	case c.NATS != "" && explicitStore:
		return t, fmt.Errorf("%w: give --nats or --store, not both", ErrUsage)
	case c.Context != "" && explicitStore:
		return t, fmt.Errorf("%w: give --context or --store, not both", ErrUsage)
	case c.Embedded && (c.NATS != "" || c.Context != ""):
		return t, fmt.Errorf("%w: --embedded runs a server in this process: give it no --nats or --context", ErrUsage)
	case c.Embeds && !c.EmbeddedOnly && !explicitStore && !c.Embedded && c.given("listen"):
		return t, fmt.Errorf("%w: --listen is the embedded server's: give --store DIR or --embedded too (or --nats URL to use a running server)", ErrUsage)
	}
	cfg := &Config{}
	if c.App != nil {
		var err error
		if cfg, err = LoadConfig(c.App.Config, getenv); err != nil {
			return t, err
		}
		t.config = cfg.Path
	}
	if explicitStore || c.Embedded || c.EmbeddedOnly {
		if c.Auth.any() {
			return t, fmt.Errorf("%w: %s: credentials are for a server (--nats), not a store directory", ErrUsage, c.Auth.flagNames())
		}
		t.store = cmp.Or(c.Store, DefaultStore)
		return t, c.settle(cfg.For(""))
	}
	contextName := cmp.Or(c.Context, getenv(NATSContextEnv), cfg.Context)
	if contextName != "" {
		nctx, err := LoadNATSContext(contextName, getenv)
		if err != nil {
			return t, err
		}
		t.context = nctx
	}
	if err := c.settle(cfg.For(contextName)); err != nil {
		return t, err
	}
	t.url = cmp.Or(c.NATS, getenv("NATS_URL"))
	if t.url == "" && t.context != nil {
		t.url = cmp.Or(t.context.URL, nats.DefaultURL)
	}
	if t.url != "" {
		return t, nil
	}
	if c.Auth.any() {
		return t, fmt.Errorf("%w: %s: credentials are for a server: give --nats URL (or $NATS_URL)", ErrUsage, c.Auth.flagNames())
	}
	u := c.defaultURL()
	switch {
	case c.NeedsBus:
		return t, fmt.Errorf("%w: no bus given: give --nats URL (or $NATS_URL), --context NAME (or $%s), or --embedded to run a single-node server in this process on --store DIR (default ./%s: its data is only as safe as that directory)", ErrUsage, NATSContextEnv, DefaultStore)
	case c.Attach && !listening(u):
		return t, fmt.Errorf("%w: no bus given, and no server listens at %s: start one (loop server), or run on an embedded server with --store DIR (or --embedded for ./%s), or give --nats URL or --context NAME", ErrUsage, u, DefaultStore)
	case c.StoreFallback && !listening(u):
		if st, err := os.Stat(filepath.Join(DefaultStore, "jetstream")); err == nil && st.IsDir() {
			t.store, t.fallback = DefaultStore, true
			return t, nil
		}
	}
	t.url, t.byDefault = u, true
	return t, nil
}

// settle fills --prefix, --replicas and --outage from s where they were
// not given on the command line.
func (c *ConnFlags) settle(s Settings) error {
	if s.Prefix != "" && !c.given("prefix") {
		c.Prefix = s.Prefix
	}
	if s.Replicas > 0 && !c.given("replicas") {
		c.Replicas = s.Replicas
	}
	if d, err := s.outage(); err != nil {
		return fmt.Errorf("%w: config file: %v", ErrUsage, err)
	} else if d > 0 && !c.given("outage") && c.Embeds && !c.EmbeddedOnly {
		c.Outage = d
	}
	return nil
}

// isStore checks, without writing anything, that dir holds a hookbus
// store (JetStream data): the error wraps embedded.ErrNoStore.
func isStore(dir string) error {
	entries, err := os.ReadDir(filepath.Join(dir, "jetstream"))
	if err == nil && len(entries) == 0 {
		err = errors.New("no JetStream data")
	}
	if err != nil {
		return fmt.Errorf("%w: %s is not a hookbus store (%v); \"loop run --store DIR\" or \"loop server --store DIR\" creates one", embedded.ErrNoStore, dir, err)
	}
	return nil
}

// listening reports whether something accepts TCP connections at the
// host:port of the nats URL u.
func listening(u string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return false
	}
	conn, err := net.DialTimeout("tcp", p.Host, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
