package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// DefaultServiceName is the spans' service.name when nothing else names
// the service.
const DefaultServiceName = "hookbus"

// Resource is the resource that describes the process sending spans, the
// way every OpenTelemetry SDK builds it, later sources overriding earlier
// ones:
//
//  1. service.name "hookbus", service.version the binary's (ReadBuild),
//     and the SDK's telemetry.sdk.* attributes;
//  2. $OTEL_RESOURCE_ATTRIBUTES (key=value,key=value, percent-encoded
//     values), then $OTEL_SERVICE_NAME, read by the SDK itself;
//  3. serviceName, when not empty (a command's --service flag).
//
// It returns an error wrapping ErrInvalidConfig when
// $OTEL_RESOURCE_ATTRIBUTES does not parse.
func Resource(ctx context.Context, serviceName string) (*resource.Resource, error) {
	opts := []resource.Option{
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName), semconv.ServiceVersion(ReadBuild().Version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	}
	if serviceName != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceName(serviceName)))
	}
	r, err := resource.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: the OpenTelemetry resource ($OTEL_RESOURCE_ATTRIBUTES, $OTEL_SERVICE_NAME): %w", ErrInvalidConfig, err)
	}
	return r, nil
}
