package health

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Paths are where Handler answers.
const (
	LivePath  = "/healthz"
	ReadyPath = "/readyz"
)

// DefaultTimeout bounds each check of a readiness probe.
const DefaultTimeout = 2 * time.Second

// Check reports whether one thing a process needs is there: nil when it
// is.
type Check func(ctx context.Context) error

// Health holds a process' readiness checks and whether it drains. It is
// safe for concurrent use.
type Health struct {
	mu       sync.Mutex
	names    []string
	checks   []Check
	draining atomic.Bool
	timeout  time.Duration
}

// New returns a Health with no checks: ready until Drain.
func New() *Health { return &Health{timeout: DefaultTimeout} }

// Add adds a readiness check, named for the answers.
func (h *Health) Add(name string, c Check) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.names = append(h.names, name)
	h.checks = append(h.checks, c)
}

// Drain marks the process as draining: it is not ready from now on.
func (h *Health) Drain() { h.draining.Store(true) }

// Draining reports whether Drain was called.
func (h *Health) Draining() bool { return h.draining.Load() }

// Result is one check's outcome.
type Result struct {
	Name string
	Err  error
}

// Ready runs every check at once, each within the timeout, and returns
// their results in the order they were added, and whether all passed and
// the process is not draining.
func (h *Health) Ready(ctx context.Context) ([]Result, bool) {
	h.mu.Lock()
	names, checks := h.names, h.checks
	h.mu.Unlock()
	out := make([]Result, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, h.timeout)
			defer cancel()
			out[i] = Result{Name: names[i], Err: run(cctx, c, h.timeout)}
		})
	}
	wg.Wait()
	ok := !h.Draining()
	for _, r := range out {
		ok = ok && r.Err == nil
	}
	return out, ok
}

// run runs c, ending at ctx's deadline (timeout) even when c does not.
func run(ctx context.Context, c Check, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- c(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer within %s", timeout)
	}
}

// Handler answers GET /healthz (200 while the process serves) and GET
// /readyz (200 when ready, else 503), each with one line per check.
func (h *Health) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+LivePath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET "+ReadyPath, func(w http.ResponseWriter, r *http.Request) {
		results, ok := h.Ready(r.Context())
		var b strings.Builder
		if h.Draining() {
			b.WriteString("FAIL draining: the process is stopping\n")
		}
		for _, res := range results {
			if res.Err != nil {
				fmt.Fprintf(&b, "FAIL %s: %v\n", res.Name, res.Err)
			} else {
				fmt.Fprintf(&b, "ok %s\n", res.Name)
			}
		}
		if ok {
			b.WriteString("ready\n")
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprint(w, b.String())
	})
	return mux
}
