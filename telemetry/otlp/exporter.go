package otlp

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

// The OTLP protocols, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
	ProtocolHTTPJSON     = "http/json"
)

// The environment variables New reads itself.
const (
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// Config is what a command's flags say; an empty field is read from the
// environment.
type Config struct {
	// Endpoint is where the spans go: http(s)://HOST[:PORT][/PATH]. Over
	// HTTP /v1/traces is added to a URL without a path; over gRPC the URL
	// has no path (http:// is plaintext, https:// is TLS). Empty:
	// $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else $OTEL_EXPORTER_OTLP_ENDPOINT;
	// one of the three is required (New does not guess a localhost
	// collector).
	Endpoint string
	// Protocol is grpc, http/protobuf or http/json (http is
	// http/protobuf). Empty: $OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
	// $OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf.
	Protocol string
	// Headers are sent with every export (an API key). Not nil: they
	// replace $OTEL_EXPORTER_OTLP_HEADERS and
	// $OTEL_EXPORTER_OTLP_TRACES_HEADERS.
	Headers map[string]string
	// NoRetry turns the exporter's own retries off (tests; a durable
	// observer redelivers the event anyway).
	NoRetry bool
}

// Target says where an exporter sends and what chose it, for a command's
// start-up line.
type Target struct {
	Protocol string
	// Endpoint is the URL spans are sent to.
	Endpoint string
	// From names what set the endpoint: "--endpoint" or the variable.
	From string
}

func (t Target) String() string {
	return fmt.Sprintf("%s %s (%s)", t.Protocol, t.Endpoint, t.From)
}

// New returns an OTLP span exporter configured by cfg over the
// environment, and where it sends. It returns an error wrapping
// ErrInvalidConfig, naming the flag or variable, when no endpoint is set,
// an endpoint is not an http(s) URL, or a protocol is unknown.
func New(ctx context.Context, cfg Config) (*otlptrace.Exporter, Target, error) {
	protocol, err := resolveProtocol(cfg.Protocol)
	if err != nil {
		return nil, Target{}, err
	}
	target, err := resolveEndpoint(cfg.Endpoint, protocol)
	if err != nil {
		return nil, Target{}, err
	}
	var exp *otlptrace.Exporter
	if protocol == ProtocolGRPC {
		var opts []otlptracegrpc.Option
		if cfg.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(target.Endpoint))
		}
		if cfg.Headers != nil {
			opts = append(opts, otlptracegrpc.WithHeaders(cfg.Headers))
		}
		if cfg.NoRetry {
			opts = append(opts, otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	} else {
		enc := otlptracehttp.EncodingProtobuf
		if protocol == ProtocolHTTPJSON {
			enc = otlptracehttp.EncodingJSON
		}
		opts := []otlptracehttp.Option{otlptracehttp.WithEncoding(enc)}
		if cfg.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(target.Endpoint))
		}
		if cfg.Headers != nil {
			opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
		}
		if cfg.NoRetry {
			opts = append(opts, otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, Target{}, fmt.Errorf("otlp exporter: %w", err)
	}
	return exp, target, nil
}

// resolveProtocol is the protocol of the flag, else of the variables.
func resolveProtocol(flag string) (string, error) {
	from, v := "--protocol", flag
	if v == "" {
		for _, env := range []string{EnvTracesProtocol, EnvProtocol} {
			if v = strings.TrimSpace(os.Getenv(env)); v != "" {
				from = "$" + env
				break
			}
		}
	}
	switch v {
	case "", "http":
		return ProtocolHTTPProtobuf, nil
	case ProtocolGRPC, ProtocolHTTPProtobuf, ProtocolHTTPJSON:
		return v, nil
	}
	return "", fmt.Errorf("%w: %s %q: give grpc, http/protobuf or http/json", ErrInvalidConfig, from, v)
}

// resolveEndpoint checks the endpoint of the flag, else of the variables,
// and says where spans go.
func resolveEndpoint(flag, protocol string) (Target, error) {
	t := Target{Protocol: protocol}
	if flag != "" {
		u, err := parseURL("--endpoint", flag)
		if err != nil {
			return t, err
		}
		if protocol == ProtocolGRPC {
			if u.Path != "" && u.Path != "/" {
				return t, fmt.Errorf("%w: --endpoint %q: an OTLP/gRPC endpoint has no path (http(s)://HOST:PORT)", ErrInvalidConfig, flag)
			}
		} else if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		t.Endpoint, t.From = u.String(), "--endpoint"
		return t, nil
	}
	if v := os.Getenv(EnvTracesEndpoint); v != "" {
		u, err := parseURL("$"+EnvTracesEndpoint, v)
		if err != nil {
			return t, err
		}
		t.Endpoint, t.From = u.String(), "$"+EnvTracesEndpoint
		return t, nil
	}
	if v := os.Getenv(EnvEndpoint); v != "" {
		u, err := parseURL("$"+EnvEndpoint, v)
		if err != nil {
			return t, err
		}
		if protocol != ProtocolGRPC {
			u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		}
		t.Endpoint, t.From = u.String(), "$"+EnvEndpoint
		return t, nil
	}
	return t, fmt.Errorf("%w: no OTLP endpoint: give --endpoint URL, or set $%s or $%s (e.g. http://127.0.0.1:4318 for OTLP/HTTP, http://127.0.0.1:4317 with grpc)",
		ErrInvalidConfig, EnvEndpoint, EnvTracesEndpoint)
}

// parseURL reads an endpoint: http or https, a host, no user, query or
// fragment (credentials go in headers).
func parseURL(from, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: %s %q: want http(s)://HOST[:PORT][/PATH] (credentials go in headers)", ErrInvalidConfig, from, s)
	}
	return u, nil
}
