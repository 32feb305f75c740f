package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/hookbus/hookbus/loop"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is a connected MCP server: its tools, as loop.Tools, and the
// session they call through. It is safe for concurrent use. A session that
// breaks (the server died, a call timed out, the connection failed) is
// dropped, and the next call opens a new one (a stdio server is started
// again). Close it when done.
type Server struct {
	cfg     ServerConfig
	log     *slog.Logger
	client  *sdk.Client
	rt      http.RoundTripper // for a URL server
	tools   []loop.Tool
	skipped []SkippedTool

	life    context.Context // ends at Close: stops a connection being made
	end     context.CancelFunc
	dialing chan struct{} // one slot: held while (re)connecting

	mu      sync.Mutex
	cur     *conn // nil: not connected
	closed  bool
	closing sync.WaitGroup // dropped connections being closed
}

// SkippedTool is a tool the server lists that Connect left out, and why:
// a name a model provider would refuse (mcp__<server>__<tool> must be 1 to
// 64 letters, digits, '_' and '-') or a name listed twice.
type SkippedTool struct {
	Name   string
	Reason string
}

// Connect starts (stdio) or reaches (HTTP) the server cfg describes,
// completes the MCP handshake and lists its tools (every page), within
// cfg.Timeout. The error wraps ErrInvalidConfig for a bad cfg or option, or
// is an *Error of Kind ErrStart (the cause, and a stdio server's stderr,
// inside) or of the context's error.
func Connect(ctx context.Context, cfg ServerConfig, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg,
		log: o.logger.With("mcp_server", cfg.Name),
		// No capabilities: no roots, sampling or elicitation.
		client:  sdk.NewClient(&sdk.Implementation{Name: "hookbus", Version: "v1"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}),
		dialing: make(chan struct{}, 1),
	}
	if cfg.URL != "" {
		s.rt = http.DefaultTransport.(*http.Transport).Clone()
	}
	s.life, s.end = context.WithCancel(context.Background())
	c, err := s.dial(ctx)
	if err != nil {
		s.end()
		return nil, withContext(ctx, err)
	}
	listed, err := s.list(ctx, c)
	if err != nil {
		c.close(false)
		s.end()
		return nil, withContext(ctx, err)
	}
	s.cur = c
	s.tools, s.skipped = s.adapt(listed)
	for _, sk := range s.skipped {
		s.log.Warn("mcp: tool skipped", "tool", sk.Name, "reason", sk.Reason)
	}
	s.log.Info("mcp: connected", "tools", len(s.tools))
	return s, nil
}

// Name is the server's configured name.
func (s *Server) Name() string { return s.cfg.Name }

// Tools are the server's tools, named mcp__<server>__<tool>, as listed when
// it connected.
func (s *Server) Tools() []loop.Tool { return append([]loop.Tool(nil), s.tools...) }

// Skipped are the tools the server listed that Connect left out.
func (s *Server) Skipped() []SkippedTool { return append([]SkippedTool(nil), s.skipped...) }

// Close ends the session (a stdio server gets EOF on its stdin, then
// SIGTERM, then SIGKILL, and its whole process group is killed) and waits
// for the connections being closed. Later calls fail with ErrClosed. It is
// safe to call more than once.
func (s *Server) Close() error {
	s.end()
	s.dialing <- struct{}{} // wait out a connection being made
	s.mu.Lock()
	c := s.cur
	s.cur, s.closed = nil, true
	s.mu.Unlock()
	<-s.dialing
	if c != nil {
		c.close(true)
	}
	s.closing.Wait()
	if s.rt != nil {
		(&http.Client{Transport: s.rt}).CloseIdleConnections()
	}
	return nil
}

// conn is one session with the server.
type conn struct {
	sess   *sdk.ClientSession
	proc   *process           // the stdio child; nil for HTTP
	cutoff context.CancelFunc // ends the HTTP requests still in flight; nil for stdio
	ended  chan struct{}      // closed when the session has ended
	once   sync.Once
}

// alive reports whether the session (and a stdio child) is still up.
func (c *conn) alive() bool {
	select {
	case <-c.ended:
		return false
	default:
	}
	return c.proc == nil || c.proc.alive()
}

// close ends the session; see process.stop for graceful.
func (c *conn) close(graceful bool) {
	c.once.Do(func() {
		if c.proc != nil && !graceful {
			c.proc.kill()
		}
		_ = c.sess.Close()
		if c.proc != nil {
			c.proc.stop(graceful)
		}
		if c.cutoff != nil {
			c.cutoff()
		}
	})
}

// stderr is the end of a stdio child's standard error.
func (c *conn) stderr() string {
	if c.proc == nil {
		return ""
	}
	return c.proc.stderr.String()
}

// dial opens a session: it starts the stdio child or reaches the URL and
// completes the handshake, within the timeout.
func (s *Server) dial(ctx context.Context) (*conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Server: s.cfg.Name, Kind: ErrStart, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout())
	defer cancel()
	stopOnClose := context.AfterFunc(s.life, cancel)
	defer stopOnClose()

	var transport sdk.Transport
	var proc *process
	var cutoff context.CancelFunc
	var abort func() // ends the connection attempt at once
	if s.cfg.Command != "" {
		p, err := startProcess(&s.cfg)
		if err != nil {
			return nil, &Error{Server: s.cfg.Name, Kind: ErrStart, Err: err}
		}
		proc, abort = p, p.kill
		transport = &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}
	} else {
		var reqs context.Context
		reqs, cutoff = context.WithCancel(context.Background())
		abort = cutoff
		transport = &sdk.StreamableClientTransport{
			Endpoint:             s.cfg.URL,
			HTTPClient:           &http.Client{Transport: &httpTransport{base: s.rt, headers: s.cfg.Headers, cutoff: reqs}},
			DisableStandaloneSSE: true,
		}
	}
	// When the time is up, a child that never answers is killed and an
	// HTTP request that hangs is ended, which ends the handshake at once.
	stop := context.AfterFunc(ctx, abort)
	sess, err := s.client.Connect(ctx, transport, nil)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		e := &Error{Server: s.cfg.Name, Kind: ErrStart, Err: s.cause(ctx, err)}
		if sess != nil {
			_ = sess.Close()
		}
		abort()
		if proc != nil {
			proc.stop(false)
			e.Stderr = proc.stderr.String()
		}
		return nil, e
	}
	c := &conn{sess: sess, proc: proc, cutoff: cutoff, ended: make(chan struct{})}
	go func() {
		_ = sess.Wait()
		close(c.ended)
	}()
	if proc != nil {
		// A child that exits ends the session, so pending calls fail at
		// once even if a grandchild holds its stdout open.
		go func() {
			select {
			case <-proc.exited:
				_ = sess.Close()
			case <-c.ended:
			}
		}()
	}
	return c, nil
}

// cause explains err from a step bounded by ctx: the server took too long,
// Close interrupted it, or err itself.
func (s *Server) cause(ctx context.Context, err error) error {
	switch {
	case s.life.Err() != nil:
		return ErrClosed
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("no answer within %v", s.cfg.timeout())
	}
	return err
}

// withContext makes err, an *Error, of the context's kind when ctx ended:
// the caller gave up, the server is not at fault.
func withContext(ctx context.Context, err error) error {
	var e *Error
	if ctx.Err() != nil && errors.As(err, &e) {
		e.Kind, e.Err, e.Stderr = ctx.Err(), nil, ""
	}
	return err
}

// list lists the server's tools, every page, within the timeout.
func (s *Server) list(ctx context.Context, c *conn) ([]*sdk.Tool, error) {
	if init := c.sess.InitializeResult(); init != nil && init.Capabilities != nil && init.Capabilities.Tools == nil {
		s.log.Warn("mcp: the server offers no tools")
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout())
	defer cancel()
	var out []*sdk.Tool
	for t, err := range c.sess.Tools(ctx, nil) {
		if err != nil {
			return nil, &Error{Server: s.cfg.Name, Kind: ErrStart, Err: fmt.Errorf("listing tools: %w", s.cause(ctx, err)), Stderr: c.stderr()}
		}
		out = append(out, t)
	}
	return out, nil
}

// session returns the live session, connecting if there is none. The error
// is an *Error (ErrStart, ErrClosed) or the context's.
func (s *Server) session(ctx context.Context, tool string) (*conn, error) {
	if c, err := s.current(tool); c != nil || err != nil {
		return c, err
	}
	select {
	case s.dialing <- struct{}{}:
	case <-ctx.Done():
		return nil, &Error{Server: s.cfg.Name, Tool: tool, Kind: ctx.Err()}
	}
	defer func() { <-s.dialing }()
	if c, err := s.current(tool); c != nil || err != nil {
		return c, err // another call reconnected meanwhile
	}
	c, err := s.dial(ctx)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Tool = tool
			if s.life.Err() != nil {
				e.Kind, e.Err = ErrClosed, nil
			}
		}
		return nil, withContext(ctx, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.close(false)
		return nil, &Error{Server: s.cfg.Name, Tool: tool, Kind: ErrClosed}
	}
	s.cur = c
	s.mu.Unlock()
	s.log.Info("mcp: reconnected")
	return c, nil
}

// current is the live session, or nil; a session that ended by itself is
// dropped.
func (s *Server) current(tool string) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &Error{Server: s.cfg.Name, Tool: tool, Kind: ErrClosed}
	}
	if s.cur != nil && !s.cur.alive() {
		s.dropLocked(s.cur)
	}
	return s.cur, nil
}

// drop forgets c if it is the current session and closes it in the
// background (Close waits for it).
func (s *Server) drop(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(c)
}

func (s *Server) dropLocked(c *conn) {
	if s.cur != c {
		return // already dropped; its closer runs
	}
	s.cur = nil
	s.log.Warn("mcp: session dropped; the next call reconnects")
	s.closing.Add(1)
	go func() {
		defer s.closing.Done()
		c.close(false)
	}()
}
