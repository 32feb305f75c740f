package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/audit/audittest"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// traceService is an OTLP/gRPC receiver keeping the spans and the
// resource's service.name.
type traceService struct {
	coltrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	spans    []*tracepb.Span
	services map[string]bool
}

func (s *traceService) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.Resource.Attributes {
			if kv.Key == "service.name" {
				s.services[kv.Value.GetStringValue()] = true
			}
		}
		for _, ss := range rs.ScopeSpans {
			s.spans = append(s.spans, ss.Spans...)
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// withContent counts the chat spans that carry gen_ai.input.messages.
func (s *traceService) withContent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sp := range s.spans {
		for _, kv := range sp.Attributes {
			if kv.Key == "gen_ai.input.messages" && strings.HasPrefix(kv.Value.GetStringValue(), `[{"role":`) {
				n++
			}
		}
	}
	return n
}

// observer otel configured by the standard variables alone: OTLP over
// gRPC to the receiver, the service name, message content on; its
// metrics count the stream's tokens exactly and say what it runs.
func TestOtelCommandFromEnvironment(t *testing.T) {
	url, _, _ := deskStore(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	svc := &traceService{services: map[string]bool{}}
	coltrace.RegisterTraceServiceServer(gs, svc)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + ln.Addr().String(),
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "",
		"OTEL_SERVICE_NAME": "desk", "OTEL_RESOURCE_ATTRIBUTES": "", CaptureContentEnv: "true",
	} {
		t.Setenv(k, v)
	}
	var input, output float64
	chats := 0
	for _, e := range audittest.Stream(t) {
		var p events.ModelResponded
		if e.Stage == events.StageModelResponded && e.DecodeData(&p) == nil {
			input += float64(p.Usage.InputTokens)
			output += float64(p.Usage.OutputTokens)
			chats++
		}
	}
	if chats == 0 || input == 0 {
		t.Fatalf("the recorded stream has %d model calls, %v input tokens", chats, input)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bustest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"otel", "--nats", url, "--metrics", "127.0.0.1:0"}, &out, &errOut)
	}()
	metricsURL := regexp.MustCompile(`http://127\.0\.0\.1:\d+/metrics`)
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return metricsURL.MatchString(errOut.String()) }, "observer otel to serve metrics: %s", &errOut)
	scrape := func() string {
		resp, err := http.Get(metricsURL.FindString(errOut.String()))
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	total := regexp.MustCompile(`(?m)^hookbus_model_tokens_total\{[^}]*type="(input|output)"[^}]*\} (\d+)$`)
	sums := func() (in, out float64) {
		for _, m := range total.FindAllStringSubmatch(scrape(), -1) {
			var v float64
			for _, c := range m[2] {
				v = v*10 + float64(c-'0')
			}
			if m[1] == "input" {
				in += v
			} else {
				out += v
			}
		}
		return in, out
	}
	bustest.Eventuallyf(t, 30*time.Second, func() bool { in, out := sums(); return in == input && out == output && svc.withContent() == chats },
		"tokens %v of %v/%v; %d of %d chat spans with content; %s", func() any { in, out := sums(); return []float64{in, out} }(), input, output, svc.withContent(), chats, &errOut)
	if !strings.Contains(errOut.String(), "grpc http://"+ln.Addr().String()+" ($OTEL_EXPORTER_OTLP_ENDPOINT), with message content") {
		t.Errorf("start-up line does not say where spans go and that content is on: %s", &errOut)
	}
	if m := scrape(); !regexp.MustCompile(`(?m)^hookbus_build_info\{goversion="go[^"]+",revision="[^"]*",version="[^"]+"\} 1$`).MatchString(m) {
		t.Errorf("no hookbus_build_info in the scrape")
	}
	svc.mu.Lock()
	if !svc.services["desk"] || len(svc.services) != 1 {
		t.Errorf("service names %v, want desk ($OTEL_SERVICE_NAME)", svc.services)
	}
	svc.mu.Unlock()
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("observer otel stopped with %d: %s", code, &errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("observer otel did not stop when its ctx ended")
	}
}

// Settings that cannot work are usage mistakes naming what to give.
func TestOtelCommandMistakes(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", CaptureContentEnv} {
		t.Setenv(k, "")
	}
	if code, _, errOut := observe(t, "otel", "--nats", "nats://127.0.0.1:1"); code != exitUsage || !strings.Contains(errOut, "$OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Errorf("no endpoint: exit %d %q", code, errOut)
	}
	if code, _, errOut := observe(t, "otel", "--endpoint", "http://127.0.0.1:4318", "--protocol", "thrift"); code != exitUsage || !strings.Contains(errOut, "--protocol") {
		t.Errorf("a bad protocol: exit %d %q", code, errOut)
	}
	t.Setenv(CaptureContentEnv, "yes please")
	if code, _, errOut := observe(t, "otel", "--endpoint", "http://127.0.0.1:4318"); code != exitUsage || !strings.Contains(errOut, CaptureContentEnv) {
		t.Errorf("a bad %s: exit %d %q", CaptureContentEnv, code, errOut)
	}
}
