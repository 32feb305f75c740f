package main

import (
	"flag"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/cmd/internal/clidoc"
)

var updateDoc = flag.Bool("update", false, "rewrite the loop section of docs/COMMANDS.md from the commands")

// docs/COMMANDS.md holds every loop command and flag, as cobra's doc
// package writes them from the commands themselves.
func TestCommandsDoc(t *testing.T) {
	a := &cli.App{Name: "loop", Version: "test", In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}}
	md, err := clidoc.Markdown(newRoot(a))
	if err != nil {
		t.Fatal(err)
	}
	if err := clidoc.Sync("../../docs/COMMANDS.md", "loop", md, *updateDoc); err != nil {
		t.Fatal(err)
	}
}

// Every loop command line of the README and the docs runs as written: a
// command that exists, flags it takes, the binary named bin/loop or loop; a
// run, a worker and a gateway are given a bus.
func TestDocsCommandsRunAsWritten(t *testing.T) {
	files, err := clidoc.DocFiles("../..")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := clidoc.Examples("loop", files...)
	if err != nil || len(examples) == 0 {
		t.Fatalf("no loop command found in %v: %v", files, err)
	}
	for _, e := range examples {
		a := &cli.App{Name: "loop", In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}}
		cmd, err := clidoc.Check(newRoot(a), e)
		if err != nil {
			t.Error(err)
			continue
		}
		if name := cmd.Name(); name == "serve" || name == "gateway" || name == "run" {
			fs := cmd.Flags()
			if !fs.Changed("nats") && !fs.Changed("context") && !fs.Changed("embedded") && !fs.Changed("store") && !strings.Contains(e.Line, "NATS_URL=") {
				t.Errorf("%s: %q: loop %s needs a bus (--nats, --context, --embedded, --store)", e.Where, e.Line, name)
			}
		}
	}
}
