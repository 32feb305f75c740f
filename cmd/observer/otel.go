package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/cmd/internal/health"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/telemetry"
	"github.com/hookbus/hookbus/telemetry/otlp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DefaultOtelDurable is the durable name of observer otel.
const DefaultOtelDurable = "hookbus-otel"

// CaptureContentEnv turns on --capture-content when "true": the variable
// OpenTelemetry's GenAI instrumentations read.
const CaptureContentEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

const otelLong = `Sends every run as an OpenTelemetry trace (GenAI span names and attributes) to an OTLP endpoint
(HTTP or gRPC), as a durable observer: each event is acknowledged once its spans are exported, so a
restart loses and duplicates nothing. Runs until interrupted. The standard OTEL_EXPORTER_OTLP_*,
OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES variables configure it; flags override them. With
--metrics it serves the Prometheus metrics of what it reads, /healthz and /readyz (connected, the
stream reachable, its consumer bound); told to stop, it exports what it holds within --drain-timeout.`

// otelOptions are the flags of observer otel.
type otelOptions struct {
	endpoint, protocol, durable, service, headers string
	capture                                       bool
}

// otelCmd runs the OpenTelemetry observer: the events stream as OTLP spans
// (telemetry.Traces), and with --metrics the Prometheus metrics of what it
// reads.
func otelCmd(a *cli.App) *cobra.Command {
	return cli.Command("otel [--endpoint URL] [flags]", "Export runs as OpenTelemetry traces (a durable observer)", otelLong, func(fs *pflag.FlagSet) cli.Run {
		conn := cli.ConnFlags{App: a}
		conn.Register(fs)
		var o otelOptions
		fs.StringVar(&o.endpoint, "endpoint", "", "the OTLP traces endpoint: a collector's http://HOST:4318 (/v1/traces is added when the URL has no path), or http(s)://HOST:4317 with --protocol grpc; default $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else $OTEL_EXPORTER_OTLP_ENDPOINT (one is required)")
		fs.StringVar(&o.protocol, "protocol", "", "the OTLP protocol: grpc, http/protobuf or http/json; default $OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else $OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf")
		fs.BoolVar(&o.capture, "capture-content", false, "record prompts, replies and tool input and output on the spans (gen_ai.input.messages, gen_ai.output.messages, gen_ai.tool.call.*): they may hold personal or secret data (docs/OPERATIONS.md); default $"+CaptureContentEnv+", else off")
		fs.StringVar(&o.durable, "durable", DefaultOtelDurable, "the observer's durable name: restarted with the same name, it resumes where it stopped")
		var admin cli.AdminFlags
		admin.Register(fs, "127.0.0.1:9465", 5*time.Second, "export the spans it holds")
		fs.StringVar(&o.service, "service", "", "the spans' service.name; default $OTEL_SERVICE_NAME, else service.name in $OTEL_RESOURCE_ATTRIBUTES, else "+telemetry.DefaultServiceName)
		fs.StringVar(&o.headers, "headers", "", "OTLP request headers, KEY=VALUE,KEY=VALUE (an API key); replaces $OTEL_EXPORTER_OTLP_HEADERS and $OTEL_EXPORTER_OTLP_TRACES_HEADERS")
		return func(ctx context.Context, args []string) error {
			if !fs.Changed("capture-content") {
				if v := os.Getenv(CaptureContentEnv); v != "" {
					on, err := strconv.ParseBool(v)
					if err != nil {
						return fmt.Errorf("%w: $%s %q: give true or false", cli.ErrUsage, CaptureContentEnv, v)
					}
					o.capture = on
				}
			}
			return otel(ctx, a, args, &conn, &admin, o)
		}
	})
}

func otel(ctx context.Context, a *cli.App, args []string, conn *cli.ConnFlags, admin *cli.AdminFlags, o otelOptions) error {
	stderr := a.Err
	if err := cli.NoArgs(nil, args); err != nil {
		return err
	}
	if err := admin.Check(); err != nil {
		return err
	}
	if err := events.ValidateID("durable", o.durable); err != nil {
		return fmt.Errorf("%w: --durable: %v", cli.ErrUsage, err)
	}
	hdrs, err := parseHeaders(o.headers)
	if err != nil {
		return err
	}
	res, err := telemetry.Resource(ctx, o.service)
	if err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	exp, target, err := otlp.New(ctx, otlp.Config{Endpoint: o.endpoint, Protocol: o.protocol, Headers: hdrs})
	if errors.Is(err, otlp.ErrInvalidConfig) {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	if err != nil {
		return err
	}
	log := a.Log.Logger(stderr)
	c, err := conn.Open(ctx, "hookbus-otel", log, cli.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	tr, err := telemetry.NewTraces(telemetry.TracesConfig{Exporter: exp, Lookup: c.Bus, Resource: res, CaptureContent: o.capture, Logger: log})
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
	ob, err := c.Bus.Observe(ctx, bus.ObserveConfig{Durable: o.durable}, handle)
	if err != nil {
		return err
	}
	h := health.New()
	c.HealthChecks(h)
	h.Add("consumer", func(context.Context) error {
		select {
		case <-ob.Closed():
			return errors.New("the durable consumer stopped")
		default:
			return nil
		}
	})
	adm, err := admin.Serve("observer otel", log, metrics, h)
	if err != nil {
		ob.Stop()
		return err
	}
	defer adm.Stop()
	adm.Say(&a.Log, stderr)
	content := "without message content"
	if o.capture {
		content = "with message content"
	}
	a.Log.Say(stderr, "observer otel: durable %s on %s, spans to %s, %s; interrupt to stop", o.durable, c.Where, target, content)
	select {
	case <-ctx.Done():
	case <-ob.Closed():
		return errors.New("observer otel: the consumer ended")
	}
	h.Drain()
	ob.Stop()
	<-ob.Closed()
	st := ob.Stats()
	a.Log.Say(stderr, "observer otel: stopped (%d events acknowledged, %d retried)", st.Acked, st.Naked)
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
