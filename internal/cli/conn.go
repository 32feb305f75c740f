package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
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

// ConnFlags are the flags that say which NATS server to use.
type ConnFlags struct {
	NATS     string
	Store    string
	Listen   string
	Prefix   string
	Replicas int
	// Outage is how long publishes wait out NATS being away (loop
	// commands; 0: the bus' default).
	Outage time.Duration
	// Embeds is set for commands that may start an embedded server.
	Embeds bool
	// DefaultURL is used by commands that cannot embed and got no --nats.
	DefaultURL string
}

// Register adds the flags to fs.
func (c *ConnFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.NATS, "nats", "", "NATS server URL (nats://user:pass@host:4222); default: $NATS_URL, else "+c.defaultDesc())
	fs.StringVar(&c.Store, "store", "", "store directory of an embedded server (default "+DefaultStore+" when no --nats)")
	if c.Embeds {
		fs.StringVar(&c.Listen, "listen", DefaultListen, "address the embedded server listens on for other processes (\"none\": in-process only)")
		fs.DurationVar(&c.Outage, "outage", bus.DefaultOutageWait, "how long to wait out NATS being away before a run's attempt stops (its request goes back to the queue; the run is not failed)")
	}
	fs.StringVar(&c.Prefix, "prefix", events.DefaultPrefix, "subject prefix")
	fs.IntVar(&c.Replicas, "replicas", 1, "stream and bucket replicas when provisioning (3 on a cluster)")
}

func (c *ConnFlags) defaultDesc() string {
	if c.Embeds {
		return "an embedded server on --store"
	}
	return c.DefaultURL
}

// Conn is an open, provisioned bus, with the embedded server behind it if
// any.
type Conn struct {
	Bus      *bus.Bus
	NC       *nats.Conn
	Embedded *embedded.Server
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
	// Provision creates or updates the streams and buckets (the loop).
	Provision Mode = iota
	// ReadOnly only reads what is there (observers, auditors).
	ReadOnly
	// Offline opens a stopped server's store directory with no listener and
	// only reads it.
	Offline
)

// Open connects (or starts the embedded server); in Provision mode it also
// creates or updates the streams and buckets.
func (c *ConnFlags) Open(ctx context.Context, name string, logger *slog.Logger, mode Mode) (*Conn, error) {
	offline := mode == Offline && (c.Store != "" || (c.NATS == "" && c.Embeds))
	if c.NATS != "" && c.Store != "" {
		return nil, fmt.Errorf("%w: give --nats or --store, not both", ErrUsage)
	}
	opts := []bus.Option{bus.WithPrefix(c.Prefix), bus.WithLogger(logger), bus.WithReplicas(c.Replicas)}
	if c.Outage > 0 {
		opts = append(opts, bus.WithPublishRetry(bus.DefaultAckTimeout, c.Outage))
	}
	url := c.NATS
	store := c.Store
	if url == "" && store == "" {
		url = os.Getenv("NATS_URL")
		switch {
		case url != "":
		case c.Embeds:
			store = DefaultStore
		default:
			url = c.DefaultURL
		}
	}
	out := &Conn{}
	if store != "" {
		var err error
		if offline {
			out.Embedded, err = embedded.OpenStore(ctx, store)
		} else {
			listen := c.Listen
			if listen == "none" {
				listen = ""
			}
			out.Embedded, err = embedded.Start(ctx, embedded.Config{StoreDir: store, Listen: listen, Logger: logger})
		}
		if err != nil {
			return nil, err
		}
		if out.NC, err = out.Embedded.Connect(nats.Name(name)); err != nil {
			out.Close()
			return nil, err
		}
	} else {
		nc, err := bus.Connect(url, nats.Name(name))
		if err != nil {
			return nil, err
		}
		out.NC = nc
	}
	b, err := bus.New(out.NC, opts...)
	if err != nil {
		out.Close()
		return nil, err
	}
	out.Bus = b
	if mode != Provision {
		return out, nil
	}
	// Provision only what is missing: a least-privileged user (the loop's in
	// deploy/nats) may read stream information but not create or update
	// streams, which an operator provisions (observer provision).
	err = b.CheckProvisioned(ctx)
	if err == nil {
		return out, nil
	}
	if !errors.Is(err, bus.ErrNotProvisioned) {
		out.Close()
		return nil, err
	}
	if perr := b.Provision(ctx); perr != nil {
		out.Close()
		return nil, fmt.Errorf("%w; creating them failed: %w (an operator can create them with \"observer provision\")", err, perr)
	}
	return out, nil
}
