package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/internal/httpauth"
)

// Bounds of the hook inputs loop gateway reads (--max-body,
// --max-body-total). Claude Code's hook inputs are small; a tool's
// output is the largest part.
const (
	DefaultMaxBody      = 8 << 20
	DefaultMaxBodyTotal = 32 << 20
)

// gateway answers Claude Code's http hooks with the bridge, reading each
// body whole only once its bytes fit the budget shared by all requests.
type gateway struct {
	base    bridge.Config // Agent: the agent of POST /claude-code
	maxBody int64
	budget  *semaphore.Weighted // bytes of bodies held at once
	held    atomic.Int64        // what budget holds now
	log     *slog.Logger
}

func newGateway(base bridge.Config, maxBody, maxTotal int64) (*gateway, error) {
	if _, err := bridge.New(base); err != nil {
		return nil, err
	}
	log := base.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &gateway{base: base, maxBody: maxBody, budget: semaphore.NewWeighted(maxTotal), log: log}, nil
}

// handler serves POST /claude-code and POST /claude-code/{agent}.
func (g *gateway) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+GatewayPath, g.serve)
	mux.HandleFunc("POST "+GatewayPath+"/{agent}", g.serve)
	return mux
}

// serve answers one hook: 200 and Claude Code's output (the outage
// policy's when hookbus cannot answer in time); 400 for an input that
// cannot be read (Claude Code's non-blocking error); 403 for an agent the
// caller's token is not bound to; 411, 413 or 503 for a body not read.
func (g *gateway) serve(w http.ResponseWriter, r *http.Request) {
	cfg := g.base
	if a := r.PathValue("agent"); a != "" {
		cfg.Agent = a
	}
	if err := events.ValidateID("agent", cfg.Agent); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id, _ := httpauth.IdentityOf(r.Context())
	if !id.MayWrite(cfg.Agent) {
		g.log.Warn("gateway: refused a write to another agent", "caller", id.Name, "agent", cfg.Agent, "peer", r.RemoteAddr)
		http.Error(w, fmt.Sprintf("the token of %s may write the sessions of agents %s, not of agent %s", id.Name, strings.Join(id.Agents, ", "), cfg.Agent), http.StatusForbidden)
		return
	}
	raw, release, status, err := g.read(r)
	if err != nil {
		g.log.Warn("gateway: hook input not read", "caller", id.Name, "agent", cfg.Agent, "status", status, "err", err)
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		http.Error(w, err.Error(), status)
		return
	}
	defer release()
	br, err := bridge.New(cfg)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	in, err := claudecode.ParseInput(raw)
	var out *claudecode.Output
	if err == nil {
		out, err = br.Handle(r.Context(), in)
	}
	if out == nil {
		status := http.StatusBadRequest
		if !errors.Is(err, claudecode.ErrBadInput) {
			status = http.StatusInternalServerError
		}
		http.Error(w, err.Error(), status)
		return
	}
	if err != nil {
		g.log.Warn("gateway: answered by policy", "event", in.HookEventName, "agent", cfg.Agent, "session", in.SessionID, "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out.JSON())
}

// read reads r's body whole once its Content-Length fits --max-body and
// the bytes all requests hold fit --max-body-total; release gives the
// bytes back. A body of unknown length (411), over --max-body (413) or
// over the budget (503) is not read at all.
func (g *gateway) read(r *http.Request) (raw []byte, release func(), status int, err error) {
	n := r.ContentLength
	switch {
	case n < 0:
		return nil, nil, http.StatusLengthRequired, errors.New("send Content-Length: a hook input of unknown length is not read")
	case n > g.maxBody:
		return nil, nil, http.StatusRequestEntityTooLarge, fmt.Errorf("a hook input of %d bytes is over --max-body (%d)", n, g.maxBody)
	}
	if !g.budget.TryAcquire(n) {
		return nil, nil, http.StatusServiceUnavailable, fmt.Errorf("the gateway holds %d bytes of hook inputs, the most it holds at once (--max-body-total): try again", g.held.Load())
	}
	g.held.Add(n)
	release = func() {
		g.held.Add(-n)
		g.budget.Release(n)
	}
	raw = make([]byte, n)
	if _, err := io.ReadFull(r.Body, raw); err != nil {
		release()
		return nil, nil, http.StatusBadRequest, fmt.Errorf("%w: the body ended before its %d bytes: %v", claudecode.ErrBadInput, n, err)
	}
	return raw, release, 0, nil
}

// byteSize is a flag of bytes: 8388608, 512KiB, 8MiB, 1GiB.
type byteSize int64

func (b *byteSize) String() string {
	switch n := int64(*b); {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "KiB"
	default:
		return strconv.FormatInt(n, 10)
	}
}

func (b *byteSize) Set(s string) error {
	num, shift := s, 0
	for _, u := range []struct {
		suffix string
		shift  int
	}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = v, u.shift
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)>>shift {
		return fmt.Errorf("%q is not a size: give bytes, or a number with KiB, MiB or GiB", s)
	}
	*b = byteSize(n << shift)
	return nil
}
