package bus_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/hookbus/hookbus/"

// TestImportsLinkNoServer holds the layering the packages table promises
// (docs/ARCHITECTURE.md): a plugin that imports bus links no nats-server
// (the embedded server is bus/embedded), events and interceptors import no
// NATS at all, and the loop engine imports no bus. bus is the log: the
// packages built on it (remote, runs, budgets) import bus, bus imports none
// of them, and none of them imports another. A plugin that only serves an
// interceptor (bus/remote/testdata/plugin) links no run-queue or budgets
// code.
func TestImportsLinkNoServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: cannot list the packages' dependencies")
	}
	const (
		busPkg  = mod + "bus"
		remote  = mod + "bus/remote"
		runs    = mod + "bus/runs"
		budgets = mod + "bus/budgets"
		plugin  = mod + "bus/remote/testdata/plugin"
	)
	deps := map[string][]string{}
	list := func(pkg string) []string {
		if d, ok := deps[pkg]; ok {
			return d
		}
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		d := strings.Fields(string(out))
		if !slices.Contains(d, pkg) {
			t.Fatalf("go list -deps %s did not list the package itself:\n%s", pkg, out)
		}
		deps[pkg] = d
		return d
	}
	for _, tc := range []struct {
		pkg       string
		forbidden string // a package, or a prefix ending in '/'
	}{
		{busPkg, "github.com/nats-io/nats-server/"},
		{mod + "events", "github.com/nats-io/"},
		{mod + "interceptors", "github.com/nats-io/"},
		// The engine declares what it needs of the transport: no bus, no NATS.
		{mod + "loop", busPkg},
		{mod + "loop", "github.com/nats-io/"},
		// Tracing is ids in headers: the OpenTelemetry SDK and Prometheus
		// stay in the telemetry package.
		{busPkg, "go.opentelemetry.io/"},
		{mod + "loop", "go.opentelemetry.io/"},
		{busPkg, "github.com/prometheus/"},
		{mod + "loop", "github.com/prometheus/"},
		// bus is the log; what is built on it imports it, never the other
		// way, and the three do not import each other.
		{busPkg, remote},
		{busPkg, runs},
		{busPkg, budgets},
		{remote, runs},
		{remote, budgets},
		{runs, remote},
		{runs, budgets},
		{budgets, remote},
		{budgets, runs},
		{remote, "github.com/nats-io/nats-server/"},
		{runs, "github.com/nats-io/nats-server/"},
		{budgets, "github.com/nats-io/nats-server/"},
		// A plugin serving one interceptor: no run queue, no budgets, no
		// server, no telemetry SDK.
		{plugin, runs},
		{plugin, budgets},
		{plugin, "github.com/nats-io/nats-server/"},
		{plugin, "go.opentelemetry.io/"},
		{plugin, "github.com/prometheus/"},
		// The tree, checkpoints, proofs and the witness' rule are checked
		// offline: no NATS client, no server (the NATS side is tlogbus).
		{mod + "tlog", "github.com/nats-io/nats.go"},
		{mod + "tlog", "github.com/nats-io/nats-server/"},
		{mod + "tlog/tlogbus", "github.com/nats-io/nats-server/"},
	} {
		var bad []string
		for _, d := range list(tc.pkg) {
			if d == tc.forbidden || strings.HasSuffix(tc.forbidden, "/") && strings.HasPrefix(d, tc.forbidden) {
				bad = append(bad, d)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s depends on %s (%d packages), e.g. %v", tc.pkg, tc.forbidden, len(bad), bad[:min(3, len(bad))])
		}
	}
	for _, pkg := range []string{remote, runs, budgets} {
		if !slices.Contains(list(pkg), busPkg) {
			t.Errorf("%s does not import bus: it is built on the log", pkg)
		}
	}
	t.Logf("a plugin serving one interceptor links %d packages", len(list(plugin)))
}
