package otlp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/telemetry"
	"github.com/hookbus/hookbus/telemetry/otlp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// export is one export request a receiver got: its path (HTTP), content
// type (HTTP), headers (HTTP headers or gRPC metadata, lower-case keys)
// and body.
type export struct {
	path, contentType string
	headers           map[string]string
	req               *coltrace.ExportTraceServiceRequest
}

// receiver keeps what an OTLP receiver got.
type receiver struct {
	mu  sync.Mutex
	got []export
}

func (rc *receiver) add(x export) {
	rc.mu.Lock()
	rc.got = append(rc.got, x)
	rc.mu.Unlock()
}

func (rc *receiver) exports() []export {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]export(nil), rc.got...)
}

// httpReceiver is an OTLP/HTTP receiver taking protobuf and JSON on any
// path.
func httpReceiver(t *testing.T) (*receiver, string) {
	t.Helper()
	rc := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &coltrace.ExportTraceServiceRequest{}
		var err error
		ct := r.Header.Get("Content-Type")
		switch ct {
		case "application/x-protobuf":
			err = proto.Unmarshal(body, req)
		case "application/json":
			err = protojson.Unmarshal(body, req)
		default:
			err = errors.New("content type " + ct)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h := map[string]string{}
		for k := range r.Header {
			h[strings.ToLower(k)] = r.Header.Get(k)
		}
		rc.add(export{path: r.URL.Path, contentType: ct, headers: h, req: req})
		w.Header().Set("Content-Type", ct)
		if ct == "application/json" {
			_, _ = w.Write([]byte("{}"))
			return
		}
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

// grpcReceiver is an OTLP/gRPC trace service on loopback.
type grpcReceiver struct {
	coltrace.UnimplementedTraceServiceServer
	rc *receiver
}

func (g *grpcReceiver) Export(ctx context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	h := map[string]string{}
	for k, v := range md {
		h[k] = strings.Join(v, ",")
	}
	g.rc.add(export{headers: h, req: req})
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func newGRPCReceiver(t *testing.T) (*receiver, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	rc := &receiver{}
	coltrace.RegisterTraceServiceServer(s, &grpcReceiver{rc: rc})
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return rc, "http://" + ln.Addr().String()
}

// otelEnv clears every variable the exporter and the resource read, then
// sets kv.
func otelEnv(t *testing.T, kv ...string) {
	t.Helper()
	for _, k := range []string{"PROTOCOL", "ENDPOINT", "HEADERS", "TIMEOUT", "COMPRESSION", "CERTIFICATE", "INSECURE"} {
		t.Setenv("OTEL_EXPORTER_OTLP_"+k, "")
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_"+k, "")
	}
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	for i := 0; i < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

// sendRun exports the span of one run through an exporter made by New
// with cfg, the resource made by telemetry.Resource.
func sendRun(t *testing.T, cfg otlp.Config, service string) otlp.Target {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg.NoRetry = true
	exp, target, err := otlp.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := telemetry.Resource(ctx, service)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := telemetry.NewTraces(telemetry.TracesConfig{Exporter: exp, Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Shutdown(ctx) }()
	meta := events.Meta{Source: "test", AgentID: "demo", SessionID: "s", RunID: "r1"}
	for _, st := range []struct {
		stage events.Stage
		data  any
	}{{events.StageRunStarted, events.RunStarted{Prompt: "hi"}}, {events.StageRunCompleted, events.RunCompleted{Reason: events.ReasonDone, Steps: 1}}} {
		e, err := events.New(st.stage, meta, st.data)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Handle(ctx, e); err != nil {
			t.Fatalf("%s: %v", st.stage, err)
		}
	}
	return target
}

// one is the receiver's one export, with its one span and resource
// attributes.
func one(t *testing.T, rc *receiver) (export, map[string]string) {
	t.Helper()
	got := rc.exports()
	if len(got) != 1 || len(got[0].req.ResourceSpans) != 1 {
		t.Fatalf("%d exports, want 1: %+v", len(got), got)
	}
	rs := got[0].req.ResourceSpans[0]
	if len(rs.ScopeSpans) != 1 || len(rs.ScopeSpans[0].Spans) != 1 || rs.ScopeSpans[0].Spans[0].Name != "invoke_agent demo" {
		t.Fatalf("spans: %+v", rs.ScopeSpans)
	}
	attrs := map[string]string{}
	for _, kv := range rs.Resource.Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	return got[0], attrs
}

// OTLP/HTTP from the generic variables: /v1/traces on the endpoint, the
// headers (percent-decoded), the service name over the resource
// attributes' one, and the other resource attributes.
func TestEnvHTTP(t *testing.T) {
	rc, url := httpReceiver(t)
	otelEnv(t,
		"OTEL_EXPORTER_OTLP_ENDPOINT", url,
		"OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret,x-tenant=acme",
		"OTEL_SERVICE_NAME", "agents-prod",
		"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test,service.name=overridden")
	target := sendRun(t, otlp.Config{}, "")
	if target.Protocol != "http/protobuf" || target.Endpoint != url+"/v1/traces" || target.From != "$OTEL_EXPORTER_OTLP_ENDPOINT" {
		t.Errorf("target %s", target)
	}
	x, res := one(t, rc)
	if x.path != "/v1/traces" || x.contentType != "application/x-protobuf" {
		t.Errorf("POST %s %s, want /v1/traces protobuf", x.path, x.contentType)
	}
	if x.headers["authorization"] != "Bearer s3cret" || x.headers["x-tenant"] != "acme" {
		t.Errorf("headers %v", x.headers)
	}
	if res["service.name"] != "agents-prod" || res["deployment.environment.name"] != "test" || res["service.version"] != telemetry.ReadBuild().Version || res["telemetry.sdk.language"] != "go" {
		t.Errorf("resource %v", res)
	}
}

// The traces-specific variables win over the generic ones: endpoint used
// as is, protocol http/json; without any name, the service is hookbus.
func TestEnvHTTPTracesVariables(t *testing.T) {
	rc, url := httpReceiver(t)
	otelEnv(t,
		"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url+"/otlp/traces",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json",
		"OTEL_EXPORTER_OTLP_HEADERS", "x-generic=1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-traces=2")
	target := sendRun(t, otlp.Config{}, "")
	if target.Protocol != "http/json" || target.From != "$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" {
		t.Errorf("target %s", target)
	}
	x, res := one(t, rc)
	if x.path != "/otlp/traces" || x.contentType != "application/json" {
		t.Errorf("POST %s %s, want /otlp/traces JSON", x.path, x.contentType)
	}
	if x.headers["x-traces"] != "2" {
		t.Errorf("headers %v, want the traces-specific ones", x.headers)
	}
	if res["service.name"] != "hookbus" {
		t.Errorf("resource %v, want service.name hookbus", res)
	}
}

// OTLP/gRPC from the variables: the endpoint as is, the headers as
// metadata.
func TestEnvGRPC(t *testing.T) {
	rc, url := newGRPCReceiver(t)
	otelEnv(t,
		"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
		"OTEL_EXPORTER_OTLP_ENDPOINT", url,
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "api-key=k%2F1",
		"OTEL_RESOURCE_ATTRIBUTES", "service.namespace=agents")
	target := sendRun(t, otlp.Config{}, "")
	if target.Protocol != "grpc" || target.Endpoint != url {
		t.Errorf("target %s", target)
	}
	x, res := one(t, rc)
	if x.headers["api-key"] != "k/1" {
		t.Errorf("metadata %v", x.headers)
	}
	if res["service.namespace"] != "agents" || res["service.name"] != "hookbus" {
		t.Errorf("resource %v", res)
	}
}

// Flags win over the variables: protocol, endpoint, headers (replacing
// the variables' ones) and the service name.
func TestFlagsOverrideEnv(t *testing.T) {
	rc, url := newGRPCReceiver(t)
	otelEnv(t,
		"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_HEADERS", "x-env=1",
		"OTEL_SERVICE_NAME", "from-env")
	target := sendRun(t, otlp.Config{Protocol: "grpc", Endpoint: url, Headers: map[string]string{"x-flag": "2"}}, "from-flag")
	if target.From != "--endpoint" || target.Protocol != "grpc" {
		t.Errorf("target %s", target)
	}
	x, res := one(t, rc)
	if x.headers["x-flag"] != "2" || x.headers["x-env"] != "" {
		t.Errorf("metadata %v, want the flag's headers only", x.headers)
	}
	if res["service.name"] != "from-flag" {
		t.Errorf("resource %v", res)
	}
}

// What cannot work is refused, naming the flag or variable.
func TestInvalidConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		cfg  otlp.Config
		want string
	}{
		{"no endpoint", nil, otlp.Config{}, "--endpoint URL, or set $OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"unknown protocol", nil, otlp.Config{Protocol: "http/xml", Endpoint: "http://127.0.0.1:4318"}, `--protocol "http/xml"`},
		{"unknown protocol variable", []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "thrift"}, otlp.Config{Endpoint: "http://127.0.0.1:4318"}, `$OTEL_EXPORTER_OTLP_TRACES_PROTOCOL "thrift"`},
		{"no scheme", nil, otlp.Config{Endpoint: "127.0.0.1:4318"}, `--endpoint "127.0.0.1:4318"`},
		{"credentials in the URL", nil, otlp.Config{Endpoint: "https://user:pw@example.com"}, "credentials go in headers"},
		{"a gRPC path", nil, otlp.Config{Protocol: "grpc", Endpoint: "http://127.0.0.1:4317/v1/traces"}, "has no path"},
		{"bad variable", []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x"}, otlp.Config{}, `$OTEL_EXPORTER_OTLP_ENDPOINT "ftp://x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			otelEnv(t, c.env...)
			_, _, err := otlp.New(context.Background(), c.cfg)
			if !errors.Is(err, otlp.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrInvalidConfig naming %q", err, c.want)
			}
		})
	}
	otelEnv(t, "OTEL_RESOURCE_ATTRIBUTES", "no-equals-sign")
	if _, err := telemetry.Resource(context.Background(), ""); !errors.Is(err, telemetry.ErrInvalidConfig) || !strings.Contains(err.Error(), "OTEL_RESOURCE_ATTRIBUTES") {
		t.Fatalf("a bad $OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
}
