package telemetry

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Build is what the running binary was built from, as the Go toolchain
// recorded it (runtime/debug.ReadBuildInfo): `loop --version` and
// `observer --version` print it, the metrics carry it as
// hookbus_build_info, and the spans' resource as service.version.
type Build struct {
	// Version is the main module's version: a release tag (v1.2.3) for a
	// binary built with go install MODULE@VERSION, a pseudo-version, or
	// "(devel)" for a build from a checkout.
	Version string
	// Revision is the VCS commit the binary was built from ("" when the
	// build recorded none: go build -buildvcs=false, or no .git).
	Revision string
	// Time is the commit's time, RFC 3339 ("" when unknown).
	Time string
	// Modified is true when the work tree had uncommitted changes.
	Modified bool
	// GoVersion is the toolchain that built it (go1.26.8).
	GoVersion string
}

// ReadBuild reads the running binary's build information. Outside a
// binary built with module support every field but GoVersion may be
// empty; Version is then "unknown".
func ReadBuild() Build {
	b := Build{Version: "unknown", GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if info.Main.Version != "" {
		b.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is one line for --version: "v1.2.3 (commit 0123abcd…, 2026-01-02T03:04:05Z, modified) go1.26.8".
func (b Build) String() string {
	var vcs []string
	if b.Revision != "" {
		vcs = append(vcs, "commit "+b.Revision)
	}
	if b.Time != "" {
		vcs = append(vcs, b.Time)
	}
	if b.Modified {
		vcs = append(vcs, "modified")
	}
	s := b.Version
	if len(vcs) > 0 {
		s += " (" + strings.Join(vcs, ", ") + ")"
	}
	return s + " " + b.GoVersion
}

// revisionLabel is the revision as the metric labels it: the commit,
// with "-modified" when the tree had changes.
func (b Build) revisionLabel() string {
	if b.Modified && b.Revision != "" {
		return b.Revision + "-modified"
	}
	return b.Revision
}

// BuildInfoCollector is the gauge hookbus_build_info, always 1, whose
// labels (version, revision, goversion) say what the process runs, as
// Prometheus' own <name>_build_info gauges do. NewMetrics registers one;
// a process that serves other metrics registers it on its own registry.
func BuildInfoCollector(b Build) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "hookbus_build_info",
		Help:        "What this process runs: version (the module's), revision (the commit, -modified for a changed tree) and goversion; always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.revisionLabel(), "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}
