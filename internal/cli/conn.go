package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/embedded"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
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
	NATS     string
	Store    string
	Listen   string
	Prefix   string
	Replicas int
	Auth     Credentials
	// Outage is how long publishes wait out NATS being away (loop
	// commands; 0: the bus' default).
	Outage time.Duration
	// Embeds is set for commands that start an embedded server when
	// given no server (loop run, serve, server).
	Embeds bool
	// EmbeddedOnly is set for loop server: no --nats nor credentials.
	EmbeddedOnly bool
	// DefaultURL is the server of commands that cannot embed when given
	// neither --nats, --store nor $NATS_URL (default: DefaultURL).
	DefaultURL string
	// BusOptions are added to the bus' options (observer provision's
	// retention).
	BusOptions []bus.Option
	// StoreFallback makes a command that cannot embed read and write
	// ./.hookbus (DefaultStore) when no server listens at DefaultURL and
	// that directory exists (observer replay, hooks, provision).
	StoreFallback bool
}

// Register adds the flags to fs.
func (c *ConnFlags) Register(fs *flag.FlagSet) {
	if !c.EmbeddedOnly {
		fs.StringVar(&c.NATS, "nats", "", "NATS server URL(s), comma-separated (nats://host:4222, tls://host:4222); default: $NATS_URL, else "+c.defaultDesc())
		c.Auth.register(fs)
	}
	if c.Embeds {
		fs.StringVar(&c.Store, "store", "", "store directory of the embedded server (default "+DefaultStore+"; with no --nats)")
		fs.StringVar(&c.Listen, "listen", DefaultListen, "address the embedded server listens on for other processes (\"none\": in-process only)")
	} else {
		fs.StringVar(&c.Store, "store", "", "a hookbus store directory to open, with no server running on it (see the default of --nats)")
	}
	if c.Embeds && !c.EmbeddedOnly {
		fs.DurationVar(&c.Outage, "outage", bus.DefaultOutageWait, "how long to wait out NATS being away before a run's attempt stops (its request goes back to the queue; the run is not failed)")
	}
	fs.StringVar(&c.Prefix, "prefix", events.DefaultPrefix, "subject prefix")
	fs.IntVar(&c.Replicas, "replicas", 1, "stream and bucket replicas when provisioning (3 on a cluster)")
}

func (c *ConnFlags) defaultURL() string {
	if c.DefaultURL != "" {
		return c.DefaultURL
	}
	return DefaultURL
}

func (c *ConnFlags) defaultDesc() string {
	switch {
	case c.Embeds:
		return "an embedded server on --store"
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
// already (embedded.ErrNoStore otherwise), whether the command reads or writes.
func (c *ConnFlags) Open(ctx context.Context, name string, logger *slog.Logger, mode Mode) (*Conn, error) {
	target, err := c.resolve()
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
	opts = append(opts, c.BusOptions...)
	if c.Outage > 0 {
		opts = append(opts, bus.WithPublishRetry(bus.DefaultAckTimeout, c.Outage))
	}
	out := &Conn{denied: &denials{}}
	natsOpts := []nats.Option{nats.Name(name), nats.ErrorHandler(out.denied.handler(logger))}
	if target.store != "" {
		out.Where = "store " + target.store
		if c.Embeds {
			listen := c.Listen
			if listen == "none" {
				listen = ""
			}
			out.Embedded, err = embedded.Start(ctx, embedded.Config{StoreDir: target.store, Listen: listen, Logger: logger})
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
			return nil, err
		}
		if out.NC, err = out.Embedded.Connect(natsOpts...); err != nil {
			out.Close()
			return nil, err
		}
	} else {
		auth, err := c.Auth.fromEnv(os.Getenv).options(target.url)
		if err != nil {
			return nil, err
		}
		nc, err := bus.Connect(target.url, append(natsOpts, auth...)...)
		if err != nil {
			if target.byDefault {
				err = fmt.Errorf("%w (no server listens at %s: start one with \"loop server\", or give --nats URL)", err, target.url)
			}
			return nil, err
		}
		out.NC = nc
		out.Where = nc.ConnectedUrlRedacted()
	}
	b, err := bus.New(out.NC, opts...)
	if err != nil {
		out.Close()
		return nil, err
	}
	out.Bus = b
	if mode == ReadOnly || mode == ProvisionStore && target.store == "" {
		return out, nil
	}
	pctx, stop := out.Guard(ctx)
	defer stop()
	if err := provisionMissing(pctx, b); err != nil {
		out.Close()
		return nil, out.Explain(err)
	}
	return out, nil
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
	byDefault  bool // url is the default, not given
}

// resolve applies the rule of the flags' help: --nats, else --store, else
// $NATS_URL, else the embedded server (commands that embed), else the
// default server, else (StoreFallback) ./.hookbus.
func (c *ConnFlags) resolve() (target, error) {
	explicitStore := c.Store != ""
	switch {
	case c.NATS != "" && explicitStore:
		return target{}, fmt.Errorf("%w: give --nats or --store, not both", ErrUsage)
	case c.NATS != "":
		return target{url: c.NATS}, nil
	case explicitStore && c.Auth.any():
		return target{}, fmt.Errorf("%w: %s: credentials are for a server (--nats), not a store directory", ErrUsage, c.Auth.flagNames())
	case explicitStore:
		return target{store: c.Store}, nil
	}
	if u := os.Getenv("NATS_URL"); u != "" && !c.EmbeddedOnly {
		return target{url: u}, nil
	}
	if c.Auth.any() {
		return target{}, fmt.Errorf("%w: %s: credentials are for a server: give --nats URL (or $NATS_URL)", ErrUsage, c.Auth.flagNames())
	}
	if c.Embeds {
		return target{store: DefaultStore}, nil
	}
	u := c.defaultURL()
	if c.StoreFallback && !listening(u) {
		if st, err := os.Stat(filepath.Join(DefaultStore, "jetstream")); err == nil && st.IsDir() {
			return target{store: DefaultStore}, nil
		}
	}
	return target{url: u, byDefault: true}, nil
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
