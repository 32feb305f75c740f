package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/telemetry"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

// DefaultOtelDurable is the durable name of observer otel.
const DefaultOtelDurable = "hookbus-otel"

// cmdOtel runs the OpenTelemetry observer: the events stream as OTLP spans
// (telemetry.Traces), and with --metrics the Prometheus metrics of what it
// reads.
func cmdOtel(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer otel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := cli.ConnFlags{}
	conn.Register(fs)
	endpoint := fs.String("endpoint", "", "the OTLP/HTTP traces endpoint: a collector's http://HOST:4318 (/v1/traces is added when the URL has no path), Jaeger's, Tempo's (required)")
	durable := fs.String("durable", DefaultOtelDurable, "the observer's durable name: restarted with the same name, it resumes where it stopped")
	metrics := fs.String("metrics", "", "serve Prometheus metrics of the events at http://ADDR/metrics (e.g. 127.0.0.1:9465); off loopback give --metrics-token-file and --metrics-public-url")
	metricsAuth := httpauth.Flags{Prefix: "metrics-"}
	metricsAuth.Register(fs)
	service := fs.String("service", "hookbus", "the spans' service.name")
	headers := fs.String("headers", "", "extra OTLP request headers, KEY=VALUE,KEY=VALUE (an API key)")
	verbose := fs.Bool("v", false, cli.VerboseHelp)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: observer otel --endpoint URL [flags]\n\nSends every run as an OpenTelemetry trace (GenAI span names and attributes) to an OTLP/HTTP endpoint,\nas a durable observer: each event is acknowledged once its spans are exported, so a restart loses and\nduplicates nothing. Runs until interrupted.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	target, err := otlpURL(*endpoint)
	if err != nil {
		return err
	}
	if err := events.ValidateID("durable", *durable); err != nil {
		return fmt.Errorf("%w: --durable: %v", cli.ErrUsage, err)
	}
	hdrs, err := parseHeaders(*headers)
	if err != nil {
		return err
	}
	log := cli.Logger(*verbose, stderr)
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
	tr, err := telemetry.NewTraces(telemetry.TracesConfig{Exporter: exp, Lookup: c.Bus, ServiceName: *service, Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tr.Shutdown(sctx)
	}()
	handle := bus.EventHandler(tr.Handle)
	if *metrics != "" {
		m := telemetry.NewMetrics()
		ln, err := metricsAuth.Listen(*metrics, httpauth.Options{Name: "observer otel --metrics", Logger: log})
		if err != nil {
			return fmt.Errorf("%w: --metrics: %w", cli.ErrUsage, err)
		}
		telemetry.ServeMetrics(ctx, ln, m)
		fmt.Fprintf(stderr, "observer otel: metrics on %smetrics\n", ln.URL())
		handle = func(ctx context.Context, e *events.Event) error {
			if err := tr.Handle(ctx, e); err != nil {
				return err
			}
			m.Observe(e) // once exported: a redelivered event is not counted twice
			return nil
		}
	}
	o, err := c.Bus.Observe(ctx, bus.ObserveConfig{Durable: *durable}, handle)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "observer otel: durable %s on %s, spans to %s; interrupt to stop\n", *durable, c.Where, target)
	select {
	case <-ctx.Done():
	case <-o.Closed():
		return errors.New("observer otel: the consumer ended")
	}
	o.Stop()
	<-o.Closed()
	st := o.Stats()
	fmt.Fprintf(stderr, "observer otel: stopped (%d events acknowledged, %d retried)\n", st.Acked, st.Naked)
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
