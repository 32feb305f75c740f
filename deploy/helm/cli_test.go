package helmchart_test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Every command line of the chart (workers, page, gateway, exporter,
// provisioning, every component on) and of deploy/nats' compose file is
// one the binaries take: each container's command and args, run with
// --help appended, parse (the subcommand exists, every flag is one of its
// flags with a value of its type) and print the help.
func TestChartCommandsParse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin+"/", "github.com/hookbus/hookbus/cmd/loop", "github.com/hookbus/hookbus/cmd/observer").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r := mustRender(t, everything(t))
	seen := map[string]bool{}
	for _, o := range r.ours() {
		tpl, ok := podSpec(o.obj)
		if !ok {
			continue
		}
		for _, c := range tpl.Spec.Containers {
			if len(c.Command) != 1 || !strings.HasPrefix(c.Command[0], "/usr/local/bin/") {
				continue
			}
			name := path.Base(c.Command[0])
			where := o.file + " " + c.Name
			out, err := exec.Command(filepath.Join(bin, name), append(append([]string{}, c.Args...), "--help")...).CombinedOutput()
			if err != nil {
				t.Errorf("%s: %s %s: %v\n%s", where, name, strings.Join(c.Args, " "), err, out)
				continue
			}
			seen[name+" "+c.Args[0]] = true
		}
	}
	for _, want := range []string{"loop serve", "loop gateway", "observer ui", "observer otel", "observer provision"} {
		if !seen[want] {
			t.Errorf("no container runs %s: %v", want, seen)
		}
	}

	raw, err := os.ReadFile("../nats/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Command []string `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, svc := range compose.Services {
		if len(svc.Command) < 2 || !strings.HasPrefix(svc.Command[0], "/usr/local/bin/") {
			continue
		}
		n++
		bin := filepath.Join(bin, path.Base(svc.Command[0]))
		if out, err := exec.Command(bin, append(append([]string{}, svc.Command[1:]...), "--help")...).CombinedOutput(); err != nil {
			t.Errorf("docker-compose.yml %s: %s: %v\n%s", name, strings.Join(svc.Command, " "), err, out)
		}
	}
	if n < 5 {
		t.Errorf("only %d hookbus services in docker-compose.yml", n)
	}
}
