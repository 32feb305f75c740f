package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/hookbus/hookbus/bridge"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/harness"
	"github.com/hookbus/hookbus/internal/httpauth"
)

// gateway answers coding agents' hooks over http with the bridge, each
// harness on its route, reading each body as its bytes fit the budgets
// (all requests', and the caller's).
type gateway struct {
	base   bridge.Config // Agent: the agent of POST /ROUTE when given
	routes []route
	limits bodyLimits
	budget *byteBudget // bytes of bodies held at once
	log    *slog.Logger
}

// route is one harness's path.
type route struct {
	path string
	h    harness.Protocol
}

// newGateway returns a gateway of the harnesses hs (Claude Code when none
// is given).
func newGateway(base bridge.Config, limits bodyLimits, hs ...harness.Protocol) (*gateway, error) {
	if err := limits.check(); err != nil {
		return nil, err
	}
	if len(hs) == 0 {
		hs = []harness.Protocol{claudecode.Harness{Options: base.Answer}}
	}
	if base.Cache == nil {
		// One process for a fleet: each session's next event is appended
		// where this gateway left the session, without reading it first.
		base.Cache = bridge.NewCache(0, 0)
	}
	g := &gateway{base: base, limits: limits, budget: newByteBudget(limits.total, limits.perCaller), log: base.Logger}
	for _, h := range hs {
		cfg := base
		cfg.Harness = h
		if _, err := bridge.New(cfg); err != nil {
			return nil, err
		}
		g.routes = append(g.routes, route{path: "/" + h.Agent(), h: h})
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	return g, nil
}

// handler serves POST /ROUTE and POST /ROUTE/{agent} for each harness.
func (g *gateway) handler() http.Handler {
	mux := http.NewServeMux()
	for _, r := range g.routes {
		serve := func(w http.ResponseWriter, req *http.Request) { g.serve(w, req, r.h) }
		mux.HandleFunc("POST "+r.path, serve)
		mux.HandleFunc("POST "+r.path+"/{agent}", serve)
	}
	return mux
}

// serve answers one hook of h: 200 and the harness's output (the outage
// policy's when hookbus cannot answer in time); 400 for an input that
// cannot be read (the harness's non-blocking error); 403 for an agent the
// caller's token is not bound to; 408, 411, 413 or 503 for a body not
// read.
func (g *gateway) serve(w http.ResponseWriter, r *http.Request, h harness.Protocol) {
	cfg := g.base
	cfg.Harness = h
	cfg.Agent = cmp.Or(r.PathValue("agent"), cfg.Agent, h.Agent())
	if err := events.ValidateID("agent", cfg.Agent); err != nil {
		httpError(w, err.Error(), http.StatusBadRequest)
		return
	}
	id, _ := httpauth.IdentityOf(r.Context())
	if !id.MayWrite(cfg.Agent) {
		g.log.Warn("gateway: refused a write to another agent", "caller", id.Name, "agent", cfg.Agent, "peer", r.RemoteAddr)
		httpError(w, fmt.Sprintf("the token of %s may write the sessions of agents %s, not of agent %s", id.Name, strings.Join(id.Agents, ", "), cfg.Agent), http.StatusForbidden)
		return
	}
	raw, release, status, err := g.read(w, r, id.Name)
	if err != nil {
		g.log.Warn("gateway: hook input not read", "caller", id.Name, "agent", cfg.Agent, "status", status, "err", err)
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		httpError(w, err.Error(), status)
		return
	}
	defer release()
	br, err := bridge.New(cfg)
	if err != nil {
		httpError(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out, err := br.Serve(r.Context(), raw)
	if out == nil {
		status := http.StatusBadRequest
		if !errors.Is(err, harness.ErrBadInput) {
			status = http.StatusInternalServerError
		}
		httpError(w, err.Error(), status)
		return
	}
	if err != nil {
		g.log.Warn("gateway: answered by policy", "harness", h.Name(), "agent", cfg.Agent, "err", err)
	}
	body := out.Stdout
	if len(body) == 0 && h.Name() == claudecode.HarnessName {
		body = []byte("{}") // an http hook's answer of nothing, as Claude Code reads it
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
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

// Type names the flag's value in the help.
func (b *byteSize) Type() string { return "SIZE" }

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

// httpError answers code with {"error": msg}, as the listener's own
// refusals (401, 403 of httpauth) do: every error of the gateway is JSON.
func httpError(w http.ResponseWriter, msg string, code int) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Error string `json:"error"`
	}{msg})
}
