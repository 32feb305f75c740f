package webui

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/record"
	"github.com/hookbus/hookbus/record/approval"
)

//go:embed static
var staticFiles embed.FS

// Bus is what the page reads and writes: a *bus.Bus. It records answers
// to approvals (approval.Answer) as the NATS user WhoAmI names.
type Bus interface {
	Replay(ctx context.Context, f bus.Filter, fn func(*events.Event) error) (bus.ReplayStats, error)
	Tail(ctx context.Context, f bus.Filter, fn func(*events.Event) error) error
	record.History
	approval.Recorder
	WhoAmI(ctx context.Context) (bus.Caller, error)
}

// Config configures a Server.
type Config struct {
	Bus Bus
	// AllowApprovals shows the Approve / Reject buttons and accepts the
	// answers they post; without it the page is read-only.
	AllowApprovals bool
	// Where names what the page reads (a server URL without credentials,
	// "store DIR"), shown in its header.
	Where string
	// Logger defaults to discarding.
	Logger *slog.Logger
	// MaxScan bounds the events one request reads (default 200000); a
	// list that reached it says so (truncated).
	MaxScan int
	// MaxChildren bounds the child runs nested in a run's timeline
	// (default 100).
	MaxChildren int
	// MaxLive bounds the live streams served at once (default 64).
	MaxLive int
	// AnswerWait is how long an answer waits for a run still running its
	// step's other calls (default 10s).
	AnswerWait time.Duration
	// Heartbeat is the interval of the live streams' keep-alive comments
	// (default 15s).
	Heartbeat time.Duration
	// Trust is the public keys (nkeys) whose signatures on a run's end are
	// trusted when the run's page verifies its record (audit.Verifier):
	// when it names any, a run signed by another key does not verify.
	Trust map[string]bool
	// RequireSigned makes a run whose end is not signed fail its page's
	// verification, as observer verify --require-signed does
	// (audit.Verifier.RequireSigned).
	RequireSigned bool
	// Fleet, when set, is where the page reads the live workers
	// (runs.NewFleet): a run that none of them holds any more and that
	// recorded nothing for longer than Lease is shown as abandoned
	// (RunSummary.Abandoned). Without it no run is.
	Fleet Fleet
	// Lease is how long a worker's run may go without a sign of life
	// before its request is given to another worker (loop serve --lease;
	// default runs.DefaultAckWait).
	Lease time.Duration
	// Registry, when set, is the interceptor registry (remote.NewRegistry):
	// the plugins page says which remote plugins are registered and which
	// were removed from it (StatsView.Registry).
	Registry Registry
	// Policies, when set, is the policy store (policies.New): the
	// policies view lists each stored policy with its mode, rollout and
	// last test (observer policy test). Without it the view shows only the
	// policies' hits the record holds.
	Policies Policies
}

// Fleet is what the page reads of the fleet: the live workers
// (*runs.Fleet).
type Fleet interface {
	Workers(ctx context.Context) ([]runs.WorkerPresence, error)
}

// Registry is what the page reads of the interceptor registry
// (*remote.Registry).
type Registry interface {
	// Entries lists the registrations, with their leases: a plugin whose
	// lease lapsed is shown gone.
	Entries(ctx context.Context) ([]remote.Entry, error)
}

// Server serves the page and its JSON API (see the package doc). It is an
// http.Handler.
type Server struct {
	cfg   Config
	log   *slog.Logger
	mux   *http.ServeMux
	live  chan struct{} // a slot per live stream
	index []byte        // static/index.html, the page's first view goes in
}

// New returns a Server reading cfg.Bus; it does no I/O. It returns an error
// wrapping ErrInvalidConfig when cfg has no bus or a negative bound.
func New(cfg Config) (*Server, error) {
	if cfg.Bus == nil {
		return nil, fmt.Errorf("%w: no bus", ErrInvalidConfig)
	}
	if cfg.MaxScan < 0 || cfg.MaxChildren < 0 || cfg.MaxLive < 0 || cfg.AnswerWait < 0 || cfg.Heartbeat < 0 || cfg.Lease < 0 {
		return nil, fmt.Errorf("%w: negative bound", ErrInvalidConfig)
	}
	cfg.MaxScan = cmp.Or(cfg.MaxScan, 200_000)
	cfg.MaxChildren = cmp.Or(cfg.MaxChildren, 100)
	cfg.MaxLive = cmp.Or(cfg.MaxLive, 64)
	cfg.AnswerWait = cmp.Or(cfg.AnswerWait, 10*time.Second)
	cfg.Heartbeat = cmp.Or(cfg.Heartbeat, 15*time.Second)
	cfg.Lease = cmp.Or(cfg.Lease, runs.DefaultAckWait)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, mux: http.NewServeMux(), live: make(chan struct{}, cfg.MaxLive)}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, err
	}
	files := http.FileServerFS(static)
	if s.index, err = fs.ReadFile(static, "index.html"); err != nil {
		return nil, err
	}
	s.mux.HandleFunc("GET /{$}", s.handlePage)
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	s.mux.HandleFunc("GET /api/config", s.handleConfig)
	s.mux.HandleFunc("GET /api/runs", serveView(s, s.runsView))
	s.mux.HandleFunc("GET /api/runs/{run}", serveView(s, func(r *http.Request) (*RunView, error) { return s.runPage(r, r.PathValue("run")) }))
	s.mux.HandleFunc("POST /api/runs/{run}/answer", s.handleAnswer)
	s.mux.HandleFunc("GET /api/approvals", serveView(s, s.approvalsView))
	s.mux.HandleFunc("GET /api/stats", serveView(s, s.statsView))
	s.mux.HandleFunc("GET /api/policies", serveView(s, s.policiesView))
	s.mux.HandleFunc("GET /api/live", s.handleLive)
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, fmt.Errorf("%w: no endpoint %s %s (see docs/PROTOCOL.md, \"The web page\")", ErrNotFound, r.Method, r.URL.Path))
	})
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

// scan replays f, calling fn for each event, and stops after MaxScan
// events (truncated is then true).
func (s *Server) scan(ctx context.Context, f bus.Filter, fn func(*events.Event)) (truncated bool, err error) {
	n := 0
	_, err = s.cfg.Bus.Replay(ctx, f, func(e *events.Event) error {
		if n >= s.cfg.MaxScan {
			return errScanLimit
		}
		n++
		fn(e)
		return nil
	})
	if errors.Is(err, errScanLimit) {
		return true, nil
	}
	return false, err
}

// ConfigView is the reply of GET /api/config.
type ConfigView struct {
	AllowApprovals bool   `json:"allow_approvals"`
	Where          string `json:"where,omitempty"`
	// User is who the page's answers are recorded as.
	User string `json:"user,omitempty"`
	// SignedIn is set when User signed in with the login form (the page
	// then offers to sign out).
	SignedIn bool `json:"signed_in,omitempty"`
}

func (s *Server) handleConfig(w http.ResponseWriter, r *http.Request) {
	s.reply(w, s.configView(r))
}

func (s *Server) configView(r *http.Request) ConfigView {
	v := ConfigView{AllowApprovals: s.cfg.AllowApprovals, Where: s.cfg.Where}
	if id, ok := httpauth.IdentityOf(r.Context()); ok {
		v.User, v.SignedIn = id.Name, id.Method == httpauth.MethodSession
	}
	return v
}

// RunsView is the reply of GET /api/runs.
type RunsView struct {
	Runs     []*RunSummary     `json:"runs"`
	Sessions []*SessionSummary `json:"sessions"`
	// Truncated is set when the window holds more events than were read:
	// narrow it (since, agent, session).
	Truncated bool `json:"truncated,omitempty"`
}

// runsView reads the runs list of GET /api/runs.
func (s *Server) runsView(r *http.Request) (*RunsView, error) {
	f, err := filterOf(r)
	if err != nil {
		return nil, err
	}
	q := RunQuery{Status: r.FormValue("status"), Text: r.FormValue("q"), Limit: 500}
	if l := r.FormValue("limit"); l != "" {
		if q.Limit, err = strconv.Atoi(l); err != nil || q.Limit <= 0 {
			return nil, fmt.Errorf("%w: limit %q is not a positive number", ErrBadRequest, l)
		}
	}
	f.Stages = audit.RunsStages
	var rs audit.Runs
	var ws attemptWorkers
	truncated, err := s.scan(r.Context(), f, func(e *events.Event) { rs.Add(e); ws.add(e) })
	if err != nil {
		return nil, err
	}
	runs, sessions := listRuns(&rs, q)
	s.markAbandoned(r.Context(), &ws, runs...)
	return &RunsView{Runs: nonNil(runs), Sessions: nonNil(sessions), Truncated: truncated}, nil
}

// StatsView is the reply of GET /api/stats.
type StatsView struct {
	Plugins []audit.PluginTotals `json:"plugins"`
	// Registry says of each plugin listed whether it is in the
	// interceptor registry now (Config.Registry; absent without one):
	// PluginRegistered, PluginRemoved (a remote plugin no longer
	// registered: no loop calls it any more), PluginGone (registered with a
	// lease its process no longer renews) or PluginInProcess (only ever
	// called in a loop's own process, which the registry does not list).
	Registry  map[string]string `json:"registry,omitempty"`
	Truncated bool              `json:"truncated,omitempty"`
}

// statsView reads the plugins' stats of GET /api/stats.
func (s *Server) statsView(r *http.Request) (*StatsView, error) {
	f, err := filterOf(r)
	if err != nil {
		return nil, err
	}
	f.Stages = audit.StatsStages
	var st audit.Stats
	remote := map[string]bool{}
	truncated, err := s.scan(r.Context(), f, func(e *events.Event) { st.Add(e); noteRemote(remote, e) })
	if err != nil {
		return nil, err
	}
	v := &StatsView{Plugins: st.Plugins(), Truncated: truncated}
	v.Registry = s.registryStates(r.Context(), v.Plugins, remote)
	return v, nil
}

// ApprovalsView is the reply of GET /api/approvals.
type ApprovalsView struct {
	Approvals []*ApprovalView `json:"approvals"`
	Truncated bool            `json:"truncated,omitempty"`
}

// approvalsView reads the calls waiting for a human (with all=1, every
// call that asked for one) of GET /api/approvals.
func (s *Server) approvalsView(r *http.Request) (*ApprovalsView, error) {
	f, err := filterOf(r)
	if err != nil {
		return nil, err
	}
	as, err := s.readApprovals(r.Context(), f)
	if err != nil {
		return nil, err
	}
	list := as.Pending()
	if r.FormValue("all") != "" {
		list = as.All()
	}
	out := make([]*ApprovalView, 0, len(list))
	for _, a := range list {
		out = append(out, approvalView(a))
	}
	return &ApprovalsView{Approvals: out}, nil
}

// runPage reads run's timeline of GET /api/runs/{run}.
func (s *Server) runPage(r *http.Request, run string) (*RunView, error) {
	f, err := filterOf(r)
	if err != nil {
		return nil, err
	}
	f.Run = run
	if err := events.ValidateID("run", f.Run); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	budget := s.cfg.MaxChildren
	v, err := s.runView(r.Context(), f, 0, &budget)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%w: the stream holds no event of run %s%s", ErrNotFound, f.Run, describe(f))
	}
	return v, nil
}

// maxDepth bounds the nesting of child runs.
const maxDepth = 8

// runView reads one run's timeline and, nested, its child runs'; nil when
// the run has no event.
func (s *Server) runView(ctx context.Context, f bus.Filter, depth int, children *int) (*RunView, error) {
	var evs []*events.Event
	truncated, err := s.scan(ctx, f, func(e *events.Event) { evs = append(evs, e) })
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	v := buildView(evs, audit.Verifier{Trust: s.cfg.Trust, RequireSigned: s.cfg.RequireSigned})
	v.Truncated = truncated
	if v.Run != nil {
		var ws attemptWorkers
		for _, e := range evs {
			ws.add(e)
		}
		s.markAbandoned(ctx, &ws, v.Run)
	}
	if depth >= maxDepth {
		return v, nil
	}
	for i, e := range evs {
		if e.Stage != events.StageSubagentBefore || *children <= 0 {
			continue
		}
		p, err := events.Data[events.SubagentBefore](e)
		if err != nil || p.RunID == "" || p.AgentID == "" || p.SessionID == "" {
			continue
		}
		*children--
		child, err := s.runView(ctx, bus.Filter{Agent: p.AgentID, Session: p.SessionID, Run: p.RunID}, depth+1, children)
		if err != nil {
			return nil, err
		}
		v.Entries[i].Child = child
	}
	return v, nil
}

func (s *Server) handleAnswer(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.AllowApprovals {
		s.fail(w, r, ErrReadOnly)
		return
	}
	if err := sameOrigin(r); err != nil {
		s.fail(w, r, err)
		return
	}
	who, ok := httpauth.IdentityOf(r.Context())
	if !ok {
		s.fail(w, r, ErrUnauthenticated)
		return
	}
	f, err := filterOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	run := r.PathValue("run")
	if err := events.ValidateID("run", run); err != nil {
		s.fail(w, r, fmt.Errorf("%w: %v", ErrBadRequest, err))
		return
	}
	var req AnswerRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.fail(w, r, fmt.Errorf("%w: the body is not an answer: %v", ErrBadRequest, err))
		return
	}
	res, err := s.answer(r.Context(), run, f, req, who)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.reply(w, res)
}

// sameOrigin refuses a cross-site POST: the body must be JSON (a form of
// another site cannot send it without the browser asking first), and an
// Origin, when the browser sends one, must be this host.
func sameOrigin(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("%w: send the answer as application/json, not %q", ErrBadRequest, ct)
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" && o != "http://"+r.Host && o != "https://"+r.Host {
		return fmt.Errorf("%w: an answer from another site (%s) is refused", ErrReadOnly, o)
	}
	return nil
}

// filterOf reads the agent, session and since parameters.
func filterOf(r *http.Request) (bus.Filter, error) {
	var f bus.Filter
	f.Agent, f.Session = r.FormValue("agent"), r.FormValue("session")
	for _, id := range []struct{ kind, v string }{{"agent", f.Agent}, {"session", f.Session}} {
		if id.v != "" {
			if err := events.ValidateID(id.kind, id.v); err != nil {
				return f, fmt.Errorf("%w: %v", ErrBadRequest, err)
			}
		}
	}
	if since := r.FormValue("since"); since != "" {
		d, err := parseAge(since)
		if err != nil {
			return f, err
		}
		f.Since = time.Now().Add(-d)
	}
	return f, nil
}

// parseAge reads a Go duration or a number of days ("7d").
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: since %q is not a positive duration (10m, 24h, 7d)", ErrBadRequest, s)
	}
	return d, nil
}

func describe(f bus.Filter) string {
	var parts []string
	if f.Agent != "" {
		parts = append(parts, "agent "+f.Agent)
	}
	if f.Session != "" {
		parts = append(parts, "session "+f.Session)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// serveView is the handler of a JSON endpoint that replies with what view
// reads of the request, or its error.
func serveView[V any](s *Server, view func(*http.Request) (V, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := view(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.reply(w, v)
	}
}

func (s *Server) reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.log.Debug("webui: reply not written", "err", err)
	}
}

// ErrorView is the body of every error reply.
type ErrorView struct {
	Error string `json:"error"`
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := statusOf(err)
	if code == 0 && r.Context().Err() != nil {
		return // the client went away
	}
	if code == 0 {
		code = http.StatusInternalServerError
		s.log.Warn("webui: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(ErrorView{Error: errorText(err)})
}

// statusOf is the HTTP status of an error of the package's; 0 for another
// (a failure of the server's own).
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrBadRequest), errors.Is(err, events.ErrInvalidID), errors.Is(err, events.ErrUnknownStage):
		return http.StatusBadRequest
	case errors.Is(err, ErrReadOnly), errors.Is(err, ErrUnauthenticated):
		return http.StatusForbidden
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, errBusy):
		return http.StatusServiceUnavailable
	}
	return 0
}

// errorText is err as the page shows it.
func errorText(err error) string { return strings.TrimPrefix(err.Error(), "webui: ") }
