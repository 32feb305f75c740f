package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hookbus/hookbus/internal/redact"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// DefaultStartTimeout bounds StartEmbedded and OpenStore when ctx has no
// deadline.
const DefaultStartTimeout = 10 * time.Second

// LockFileName is the file in a store directory that an embedded server
// holds an exclusive lock on while it runs.
const LockFileName = "hookbus.lock"

// EmbeddedConfig configures an in-process nats-server with JetStream.
type EmbeddedConfig struct {
	// StoreDir is the JetStream store directory (required). It is created
	// if missing; JetStream keeps its data under StoreDir/jetstream.
	StoreDir string
	// Listen is the client address, "host:port" ("127.0.0.1:4222"; port -1
	// picks a free port). Empty means no TCP listener: only in-process
	// connections (Connect).
	Listen string
	// ServerName names the server (default "hookbus").
	ServerName string
	// MaxPayload is the server's max_payload in bytes (default 1 MiB).
	MaxPayload int32
	// SyncAlways fsyncs every JetStream write (the default fsyncs every
	// 2 minutes). Set it where the store is the only copy of the audit trail.
	SyncAlways bool
	// Logger receives the server's log (default: discard).
	Logger *slog.Logger
	// Debug forwards the server's debug and trace lines to Logger.
	Debug bool
}

// Embedded is a running in-process nats-server with JetStream.
type Embedded struct {
	srv      *server.Server
	storeDir string
	listen   bool
	lock     *os.File
	once     sync.Once
}

// StartEmbedded starts an in-process nats-server with JetStream on
// cfg.StoreDir and waits until it accepts connections (bounded by ctx, or
// DefaultStartTimeout when ctx has no deadline). Errors: ErrInvalidOption
// (no store dir, bad Listen), ErrAddrInUse (the listen address is taken),
// ErrStoreLocked (another server holds the store), ErrServerStart.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	return startEmbedded(ctx, cfg, nil)
}

// startEmbedded runs check, if any, once the store is locked.
func startEmbedded(ctx context.Context, cfg EmbeddedConfig, check func() error) (*Embedded, error) {
	if cfg.StoreDir == "" {
		return nil, invalid("embedded server: empty store directory")
	}
	host, port, err := splitListen(cfg.Listen)
	if err != nil {
		return nil, err
	}
	if port > 0 {
		// nats-server only reports a busy port by never becoming ready:
		// check first, so the error names the address.
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrAddrInUse, cfg.Listen, err)
		}
		l.Close()
	}
	if err := os.MkdirAll(cfg.StoreDir, 0o750); err != nil {
		return nil, fmt.Errorf("%w: store directory: %w", ErrServerStart, err)
	}
	lock, err := lockStore(cfg.StoreDir)
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			unlockStore(lock)
			return nil, err
		}
	}
	name := cfg.ServerName
	if name == "" {
		name = "hookbus"
	}
	opts := &server.Options{
		ServerName: name,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		SyncAlways: cfg.SyncAlways,
		MaxPayload: cfg.MaxPayload,
		NoSigs:     true,
		NoLog:      cfg.Logger == nil,
		DontListen: cfg.Listen == "",
		Host:       host,
		Port:       port,
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		unlockStore(lock)
		return nil, fmt.Errorf("%w: %w", ErrServerStart, err)
	}
	if cfg.Logger != nil {
		srv.SetLoggerV2(serverLogger{cfg.Logger}, cfg.Debug, cfg.Debug, false)
	}
	srv.Start()
	wait := DefaultStartTimeout
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		srv.WaitForShutdown()
		unlockStore(lock)
		if cfg.Listen != "" {
			return nil, fmt.Errorf("%w: not ready after %v (listening on %s)", ErrServerStart, wait, cfg.Listen)
		}
		return nil, fmt.Errorf("%w: not ready after %v", ErrServerStart, wait)
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		unlockStore(lock)
		return nil, fmt.Errorf("%w: JetStream is not enabled (store %s)", ErrServerStart, cfg.StoreDir)
	}
	return &Embedded{srv: srv, storeDir: cfg.StoreDir, listen: cfg.Listen != "", lock: lock}, nil
}

// OpenStore starts an embedded server, without a listener, on an existing
// store directory, for offline replay of a stopped server's data. It
// returns an error wrapping ErrNoStore when dir holds no JetStream data,
// ErrStoreLocked when a running server holds it, or what StartEmbedded
// returns.
func OpenStore(ctx context.Context, dir string) (*Embedded, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrNoStore, dir, err)
	}
	hasData := func() error {
		js := filepath.Join(dir, "jetstream")
		entries, err := os.ReadDir(js)
		if err == nil && len(entries) == 0 {
			err = errors.New("empty")
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrNoStore, js, err)
		}
		return nil
	}
	return startEmbedded(ctx, EmbeddedConfig{StoreDir: dir, ServerName: "hookbus-offline"}, hasData)
}

func splitListen(listen string) (string, int, error) {
	if listen == "" {
		return "", 0, nil
	}
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, invalid("listen address %q: %v", listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < -1 || port > 65535 {
		return "", 0, invalid("listen address %q: bad port", listen)
	}
	if port == 0 {
		port = -1 // 0 would mean nats-server's default 4222
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}

// Connect returns an in-process connection to the server (no TCP). Options
// are applied after hookbus' defaults (a connection name).
func (e *Embedded) Connect(opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{nats.Name("hookbus-embedded"), nats.InProcessServer(e.srv)}, opts...)
	nc, err := nats.Connect("", all...)
	if err != nil {
		return nil, fmt.Errorf("hookbus: connect in-process: %w", err)
	}
	return nc, nil
}

// ClientURL returns the nats:// URL of the TCP listener, or "" when the
// server has none.
func (e *Embedded) ClientURL() string {
	if !e.listen {
		return ""
	}
	return e.srv.ClientURL()
}

// StoreDir returns the store directory.
func (e *Embedded) StoreDir() string { return e.storeDir }

// Server returns the underlying nats-server.
func (e *Embedded) Server() *server.Server { return e.srv }

// Shutdown stops the server, waits until it has stopped and releases the
// store directory. It is safe to call more than once.
func (e *Embedded) Shutdown() {
	e.once.Do(func() {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
		unlockStore(e.lock)
	})
}

// Connect connects to an external nats-server at url (comma-separated for a
// cluster) with hookbus' defaults: a connection name, reconnecting forever
// every 500ms with jitter, and retrying a failed first connect. Options
// given are applied after the defaults. The error names url with its user
// info masked.
func Connect(url string, opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{
		nats.Name("hookbus"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
	}, opts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("hookbus: connect %s: %w", redact.URL(url), redact.Error(err, redact.UserInfo(url)...)) // never the credentials
	}
	return nc, nil
}
