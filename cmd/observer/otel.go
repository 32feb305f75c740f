package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/internal/health"
	"github.com/hookbus/hookbus/telemetry"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

// DefaultOtelDurable is the durable name of observer otel.
const DefaultOtelDurable = "hookbus-otel"

const otelLong = `Sends every run as an OpenTelemetry trace (GenAI span names and attributes) to an OTLP/HTTP endpoint,
as a durable observer: each event is acknowledged once its spans are exported, so a restart loses and
duplicates nothing. Runs until interrupted. With --metrics it serves the Prometheus metrics of what it
reads, /healthz and /readyz (connected, the stream reachable, its consumer bound); told to stop, it
exports what it holds within --drain-timeout.`

// otelCmd runs the OpenTelemetry observer: the events stream as OTLP spans
// (telemetry.Traces), and with --metrics the Prometheus metrics of what it
// reads.
func otelCmd(a *cli.App) *cobra.Command {
	return cli.Command("otel --endpoint URL [flags]", "Export runs as OpenTelemetry traces (a durable observer)", otelLong, func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a}
		conn.Register(fs)
		endpoint := fs.String("endpoint", "", "the OTLP/HTTP traces endpoint: a collector's http://HOST:4318 (/v1/traces is added when the URL has no path), Jaeger's, Tempo's (required)")
		durable := fs.String("durable", DefaultOtelDurable, "the observer's durable name: restarted with the same name, it resumes where it stopped")
		var admin cli.AdminFlags
		admin.Register(fs, "127.0.0.1:9465", 5*time.Second, "export the spans it holds")
		service := fs.String("service", "hookbus", "the spans' service.name")
		headers := fs.String("headers", "", "extra OTLP request headers, KEY=VALUE,KEY=VALUE (an API key)")
		return func(ctx context.Context, args []string) error {
			return otel(ctx, a, args, &conn, &admin, *endpoint, *durable, *service, *headers)
		}
	})
}

func otel(ctx context.Context, a *cli.App, args []string, conn *cli.ConnFlags, admin *cli.AdminFlags, endpoint, durable, service, headers string) error {
	stderr := a.Err
	if err := cli.NoArgs(nil, args); err != nil {
		return err
	}
	if err := admin.Check(); err != nil {
		return err
	}
	target, err := otlpURL(endpoint)
	if err != nil {
		return err
	}
	if err := events.ValidateID("durable", durable); err != nil {
		return fmt.Errorf("%w: --durable: %v", cli.ErrUsage, err)
	}
	hdrs, err := parseHeaders(headers)
	if err != nil {
		return err
	}
	log := a.Log.Logger(stderr)
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(target)}
	if len(hdrs) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(hdrs))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return fmt.Errorf("otlp exporter: %w", err)
	}
	c, err := conn.Open(ctx, "hookbus-otel", log, cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	tr, err := telemetry.NewTraces(telemetry.TracesConfig{Exporter: exp, Lookup: c.Bus, ServiceName: service, Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), admin.Drain)
		defer cancel()
		_ = tr.Shutdown(sctx)
	}()
	handle := bus.EventHandler(tr.Handle)
	var metrics http.Handler
	if admin.Addr != "" {
		m := telemetry.NewMetrics()
		metrics = m.Handler()
		handle = func(ctx context.Context, e *events.Event) error {
			if err := tr.Handle(ctx, e); err != nil {
				return err
			}
			m.Observe(e) // once exported: a redelivered event is not counted twice
			return nil
		}
	}
	o, err := c.Bus.Observe(ctx, bus.ObserveConfig{Durable: durable}, handle)
	if err != nil {
		return err
	}
	h := health.New()
	c.HealthChecks(h)
	h.Add("consumer", func(context.Context) error {
		select {
		case <-o.Closed():
			return errors.New("the durable consumer stopped")
		default:
			return nil
		}
	})
	adm, err := admin.Serve("observer otel", log, metrics, h)
	if err != nil {
		o.Stop()
		return err
	}
	defer adm.Stop()
	if adm.URL != "" {
		a.Log.Say(stderr, "observer otel: metrics on %smetrics, probes on %shealthz and %sreadyz", adm.URL, adm.URL, adm.URL)
	}
	a.Log.Say(stderr, "observer otel: durable %s on %s, spans to %s; interrupt to stop", durable, c.Where, target)
	select {
	case <-ctx.Done():
	case <-o.Closed():
		return errors.New("observer otel: the consumer ended")
	}
	h.Drain()
	o.Stop()
	<-o.Closed()
	st := o.Stats()
	a.Log.Say(stderr, "observer otel: stopped (%d events acknowledged, %d retried)", st.Acked, st.Naked)
	return nil
}

// otlpURL checks --endpoint and adds the OTLP traces path when the URL has
// none.
func otlpURL(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: --endpoint is required (an OTLP/HTTP endpoint, e.g. http://127.0.0.1:4318)", cli.ErrUsage)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: --endpoint %q: want http(s)://HOST[:PORT][/PATH]", cli.ErrUsage, s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// parseHeaders reads KEY=VALUE,KEY=VALUE.
func parseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%w: --headers: %q is not KEY=VALUE", cli.ErrUsage, kv)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}
