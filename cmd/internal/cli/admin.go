package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/hookbus/hookbus/cmd/internal/health"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/telemetry"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
)

// AdminFlags are a long-running command's admin address and how it stops:
// --metrics ADDR serves GET /metrics (Prometheus), /healthz (alive) and
// /readyz (ready: connected, its stream reachable, its consumer bound;
// not while draining), behind the listener flags of httpauth
// (--metrics-token-file, --metrics-public-url, --metrics-tls-cert, ...);
// --drain-timeout bounds the drain when it is told to stop.
type AdminFlags struct {
	Addr  string
	Drain time.Duration
	auth  httpauth.Flags
}

// Register defines the flags on fs: example is an address for the help
// (127.0.0.1:9464), drain the default --drain-timeout and drainHelp what
// the command does while it drains (no --drain-timeout when "").
func (f *AdminFlags) Register(fs *pflag.FlagSet, example string, drain time.Duration, drainHelp string) {
	fs.StringVar(&f.Addr, "metrics", "", "the admin address: serve Prometheus metrics at http://ADDR/metrics and the probes /healthz and /readyz (e.g. "+example+"); off loopback give --metrics-token-file and --metrics-public-url (the probes need neither)")
	f.auth = httpauth.Flags{Prefix: "metrics-"}
	f.auth.Register(fs)
	f.Drain = drain
	if drainHelp == "" {
		return
	}
	fs.DurationVar(&f.Drain, "drain-timeout", drain, "when told to stop (SIGTERM, Ctrl-C): "+drainHelp+", for at most this long (/readyz answers 503 meanwhile)")
}

// Check refuses a negative --drain-timeout.
func (f *AdminFlags) Check() error {
	if f.Drain < 0 {
		return fmt.Errorf("%w: --drain-timeout %s is negative", ErrUsage, f.Drain)
	}
	return nil
}

// Admin is a running admin endpoint.
type Admin struct {
	// URL is where it listens ("" when no --metrics was given).
	URL    string
	name   string
	cancel context.CancelFunc
	done   chan struct{}
}

// Serve serves metrics (nil: hookbus_build_info and the Go runtime's and
// the process' metrics) and h's probes on --metrics, until Stop; without
// --metrics it serves nothing. name names the listener in errors. A
// listener it cannot open or that would be unprotected is a usage error.
func (f *AdminFlags) Serve(name string, log *slog.Logger, metrics http.Handler, h *health.Health) (*Admin, error) {
	a := &Admin{name: name, cancel: func() {}, done: make(chan struct{})}
	if f.Addr == "" {
		close(a.done)
		return a, nil
	}
	ln, err := f.auth.Listen(f.Addr, httpauth.Options{Name: name + " --metrics", Logger: log, Probes: []string{health.LivePath, health.ReadyPath}})
	if err != nil {
		if errors.Is(err, httpauth.ErrInvalidConfig) || errors.Is(err, httpauth.ErrUnprotected) {
			return nil, fmt.Errorf("%w: --metrics: %w", ErrUsage, err)
		}
		return nil, err
	}
	if metrics == nil {
		metrics = BuildMetrics()
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	probes := h.Handler()
	mux.Handle("GET "+health.LivePath, probes)
	mux.Handle("GET "+health.ReadyPath, probes)
	ctx, cancel := context.WithCancel(context.Background())
	a.URL, a.cancel = ln.URL(), cancel
	go func() {
		defer close(a.done)
		_ = ln.Serve(ctx, mux)
	}()
	return a, nil
}

// Say says, with l on w, where the metrics and the probes are served;
// nothing when they are not.
func (a *Admin) Say(l *LogFlags, w io.Writer) {
	if a.URL != "" {
		l.Say(w, "%s: metrics on %smetrics, probes on %shealthz and %sreadyz", a.name, a.URL, a.URL, a.URL)
	}
}

// Stop stops serving and waits for the listener to close.
func (a *Admin) Stop() {
	a.cancel()
	<-a.done
}

// BuildMetrics is the metrics of a process that counts nothing of its own:
// hookbus_build_info and the Go runtime's and the process' collectors.
func BuildMetrics() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(telemetry.BuildInfoCollector(telemetry.ReadBuild()),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// HealthChecks adds c's readiness checks to h: "nats" (the connection is
// up) and "stream" (the events stream answers).
func (c *Conn) HealthChecks(h *health.Health) {
	h.Add("nats", func(context.Context) error {
		if !c.NC.IsConnected() {
			return fmt.Errorf("not connected (%s)", c.NC.Status())
		}
		return nil
	})
	h.Add("stream", func(ctx context.Context) error {
		js, err := jetstream.New(c.NC)
		if err != nil {
			return err
		}
		name := c.Bus.Names().Events
		if _, err := js.Stream(ctx, name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
}
