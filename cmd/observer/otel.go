package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/cli"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/telemetry"
	"github.com/hookbus/hookbus/telemetry/otlp"
)

// DefaultOtelDurable is the durable name of observer otel.
const DefaultOtelDurable = "hookbus-otel"

// CaptureContentEnv turns on --capture-content when "true": the variable
// OpenTelemetry's GenAI instrumentations read.
const CaptureContentEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// cmdOtel runs the OpenTelemetry observer: the events stream as OTLP spans
// (telemetry.Traces), and with --metrics the Prometheus metrics of what it
// reads.
func cmdOtel(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("observer otel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := cli.ConnFlags{}
	conn.Register(fs)
	endpoint := fs.String("endpoint", "", "the OTLP traces endpoint: a collector's http://HOST:4318 (/v1/traces is added when the URL has no path), or http(s)://HOST:4317 with --protocol grpc; default $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else $OTEL_EXPORTER_OTLP_ENDPOINT (one is required)")
	protocol := fs.String("protocol", "", "the OTLP protocol: grpc, http/protobuf or http/json; default $OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else $OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf")
	capture := fs.Bool("capture-content", false, "record prompts, replies and tool input and output on the spans (gen_ai.input.messages, gen_ai.output.messages, gen_ai.tool.call.*): they may hold personal or secret data (docs/OPERATIONS.md); default $"+CaptureContentEnv+", else off")
	durable := fs.String("durable", DefaultOtelDurable, "the observer's durable name: restarted with the same name, it resumes where it stopped")
	metrics := fs.String("metrics", "", "serve Prometheus metrics of the events at http://ADDR/metrics (e.g. 127.0.0.1:9465); off loopback give --metrics-token-file and --metrics-public-url")
	metricsAuth := httpauth.Flags{Prefix: "metrics-"}
	metricsAuth.Register(fs)
	service := fs.String("service", "", "the spans' service.name; default $OTEL_SERVICE_NAME, else service.name in $OTEL_RESOURCE_ATTRIBUTES, else "+telemetry.DefaultServiceName)
	headers := fs.String("headers", "", "OTLP request headers, KEY=VALUE,KEY=VALUE (an API key); replaces $OTEL_EXPORTER_OTLP_HEADERS and $OTEL_EXPORTER_OTLP_TRACES_HEADERS")
	verbose := fs.Bool("v", false, cli.VerboseHelp)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: observer otel [--endpoint URL] [flags]\n\nSends every run as an OpenTelemetry trace (GenAI span names and attributes) to an OTLP endpoint\n(HTTP or gRPC), as a durable observer: each event is acknowledged once its spans are exported, so a\nrestart loses and duplicates nothing. Runs until interrupted. The standard OTEL_EXPORTER_OTLP_*,\nOTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES variables configure it; flags override them.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if err := events.ValidateID("durable", *durable); err != nil {
		return fmt.Errorf("%w: --durable: %v", cli.ErrUsage, err)
	}
	hdrs, err := parseHeaders(*headers)
	if err != nil {
		return err
	}
	if !cli.Set(fs)["capture-content"] {
		if v := os.Getenv(CaptureContentEnv); v != "" {
			on, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%w: $%s %q: give true or false", cli.ErrUsage, CaptureContentEnv, v)
			}
			*capture = on
		}
	}
	res, err := telemetry.Resource(ctx, *service)
	if err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	exp, target, err := otlp.New(ctx, otlp.Config{Endpoint: *endpoint, Protocol: *protocol, Headers: hdrs})
	if errors.Is(err, otlp.ErrInvalidConfig) {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	if err != nil {
		return err
	}
	log := cli.Logger(*verbose, stderr)
	c, err := conn.Open(ctx, "hookbus-otel", log, cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	tr, err := telemetry.NewTraces(telemetry.TracesConfig{Exporter: exp, Lookup: c.Bus, Resource: res, CaptureContent: *capture, Logger: log})
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
	content := "without message content"
	if *capture {
		content = "with message content"
	}
	fmt.Fprintf(stderr, "observer otel: durable %s on %s, spans to %s, %s; interrupt to stop\n", *durable, c.Where, target, content)
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

// parseHeaders reads KEY=VALUE,KEY=VALUE (nil for none given).
func parseHeaders(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%w: --headers: %q is not KEY=VALUE", cli.ErrUsage, kv)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}
