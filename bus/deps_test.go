package bus_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportsLinkNoServer holds the layering the packages table promises: a
// plugin that imports bus links no nats-server (the embedded server is
// bus/embedded), events and interceptors import no NATS at all, and the
// loop engine imports no bus.
func TestImportsLinkNoServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: cannot list the packages' dependencies")
	}
	for _, tc := range []struct {
		pkg       string
		forbidden string
	}{
		{"github.com/hookbus/hookbus/bus", "github.com/nats-io/nats-server/"},
		{"github.com/hookbus/hookbus/events", "github.com/nats-io/"},
		{"github.com/hookbus/hookbus/interceptors", "github.com/nats-io/"},
		// The engine declares what it needs of the transport: no bus, no NATS.
		{"github.com/hookbus/hookbus/loop", "github.com/hookbus/hookbus/bus"},
		{"github.com/hookbus/hookbus/loop", "github.com/nats-io/"},
		// Tracing is ids in headers: the OpenTelemetry SDK and Prometheus
		// stay in the telemetry package.
		{"github.com/hookbus/hookbus/bus", "go.opentelemetry.io/"},
		{"github.com/hookbus/hookbus/loop", "go.opentelemetry.io/"},
		{"github.com/hookbus/hookbus/bus", "github.com/prometheus/"},
		// The tree, checkpoints, proofs and the witness' rule are checked
		// offline: no NATS client, no server (the NATS side is tlogbus).
		{"github.com/hookbus/hookbus/tlog", "github.com/nats-io/nats.go"},
		{"github.com/hookbus/hookbus/tlog", "github.com/nats-io/nats-server/"},
		{"github.com/hookbus/hookbus/tlog/tlogbus", "github.com/nats-io/nats-server/"},
		{"github.com/hookbus/hookbus/loop", "github.com/prometheus/"},
	} {
		out, err := exec.Command(goTool, "list", "-deps", tc.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tc.pkg, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, tc.pkg) {
			t.Fatalf("go list -deps %s did not list the package itself:\n%s", tc.pkg, out)
		}
		var bad []string
		for _, d := range deps {
			if strings.HasPrefix(d, tc.forbidden) {
				bad = append(bad, d)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s depends on %s (%d packages), e.g. %v", tc.pkg, tc.forbidden, len(bad), bad[:min(3, len(bad))])
		}
	}
}
