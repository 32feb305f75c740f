package helmchart_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// Values that cannot work fail to render, by the schema or by the
// templates, with an error naming the value.
func TestBadValuesFail(t *testing.T) {
	for _, c := range []struct {
		name, values, want string
	}{
		{"an unknown key", "wokrer: {replicas: 3}", "wokrer"},
		{"an unknown component key", "worker: {replica: 3}", "replica"},
		{"a number as text", "worker: {replicas: two}", "/worker/replicas"},
		{"a drain in hours", "worker: {drainTimeout: 1h}", "/worker/drainTimeout"},
		{"a grace shorter than the drain", "worker: {drainTimeout: 90s, terminationGracePeriodSeconds: 60}", "worker.terminationGracePeriodSeconds 60 must be at least worker.drainTimeout 90s + 15 s (105 s)"},
		{"no time left to hand runs back", "worker: {drainTimeout: 60s, terminationGracePeriodSeconds: 70}", "worker.terminationGracePeriodSeconds 70 must be at least worker.drainTimeout 60s + 15 s (75 s)"},
		{"a prefix with a dot", "bus: {prefix: acme.corp}", "/bus/prefix"},
		{"a bus URL without scheme", "bus: {url: 'nats-1:4222'}", "/bus/url"},
		{"no bus at all", "nats: {enabled: false}", "bus.url is required when nats.enabled is false"},
		{"an existing NATS Secret with the bundled NATS", "natsAuth: {existingSecret: mine}", "natsAuth.existingSecret works with a NATS of your own"},
		{"a short password", "natsAuth: {passwords: {loop: short}}", "/natsAuth/passwords/loop"},
		{"an approver named as a chart user", "natsAuth: {approvers: [loop]}", `natsAuth.approvers: "loop"`},
		{"an approver that is no subject token", "natsAuth: {approvers: [alice@example.com]}", "/natsAuth/approvers/0"},
		{"a seed that is none", "signing: {seed: not-a-seed}", "/signing/seed"},
		{"an Ingress without a URL", "ui: {ingress: {enabled: true}}", "ui.ingress.enabled needs ui.publicURL"},
		{"a public URL with a query", "ui: {publicURL: 'https://x.example.com/?a=b'}", "/ui/publicURL"},
		{"the exporter without an endpoint", "otel: {enabled: true}", "otel.endpoint is required"},
		{"an unknown OTLP protocol", "otel: {protocol: thrift}", "/otel/protocol"},
		{"a gateway grace shorter than its preStop", "gateway: {enabled: true, preStopSleepSeconds: 30, terminationGracePeriodSeconds: 30}", "gateway.terminationGracePeriodSeconds 30 must be longer than gateway.preStopSleepSeconds 30"},
		{"JSON-less log format", "logFormat: logfmt", "/logFormat"},
		{"the checkpointer without its key", "checkpointer: {enabled: true}", "checkpointer.keySecret is required"},
		{"a checkpoint every 0 messages", "checkpointer: {every: 0}", "/checkpointer/every"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := render(t, c.values)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("values %s: err %v, want one naming %q", c.values, err, c.want)
			}
		})
	}
}

// helm lint's own rules pass on the chart, as `helm lint` runs them after
// `helm dependency update` (the NATS chart in charts/): no error and no
// warning.
func TestHelmLint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hookbus")
	if err := os.CopyFS(dir, os.DirFS("hookbus")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "charts", "nats"), os.DirFS("testdata/nats")); err != nil {
		t.Fatal(err)
	}
	for _, values := range []string{"", everythingYAML} {
		vals, err := chartutil.ReadValues([]byte(strings.NewReplacer("seed: SEED", "seed: ''", "PUBLIC", "").Replace(values)))
		if err != nil {
			t.Fatal(err)
		}
		l := lint.AllWithKubeVersion(dir, vals, namespace, &chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"})
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("helm lint: %s", m)
			} else {
				t.Logf("helm lint: %s", m)
			}
		}
	}
}

// The NATS chart of testdata is the version Chart.yaml depends on, and the
// NATS image is go.mod's nats-server release.
func TestNATSChartVersion(t *testing.T) {
	hookbus, err := loader.LoadDir("hookbus")
	if err != nil {
		t.Fatal(err)
	}
	nats, err := loader.LoadDir("testdata/nats")
	if err != nil {
		t.Fatal(err)
	}
	if len(hookbus.Metadata.Dependencies) != 1 {
		t.Fatalf("dependencies: %+v", hookbus.Metadata.Dependencies)
	}
	dep := hookbus.Metadata.Dependencies[0]
	if dep.Name != "nats" || dep.Version != nats.Metadata.Version || dep.Condition != "nats.enabled" || !strings.HasPrefix(dep.Repository, "https://") {
		t.Errorf("dependency %+v; testdata/nats is %s %s", dep, nats.Metadata.Name, nats.Metadata.Version)
	}
	tag := hookbus.Values["nats"].(map[string]any)["container"].(map[string]any)["image"].(map[string]any)["tag"]
	if want := natsServerVersion(t) + "-alpine"; tag != want {
		t.Errorf("nats.container.image.tag %v, want %s (go.mod's nats-server)", tag, want)
	}
}

// The chart's test dependencies (Helm, the Kubernetes API) stay out of the
// binaries.
func TestBinariesLinkNoHelm(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/hookbus/hookbus/cmd/loop", "github.com/hookbus/hookbus/cmd/observer").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if bad := regexp.MustCompile(`(?m)^(helm\.sh|k8s\.io|sigs\.k8s\.io|github\.com/prometheus-operator)/.*$`).FindAllString(string(out), 5); len(bad) > 0 {
		t.Errorf("the binaries link %v", bad)
	}
}
