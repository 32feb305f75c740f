package main

import (
	"strings"
	"testing"

	"github.com/hookbus/hookbus/cmd/internal/cli"
	"github.com/hookbus/hookbus/cmd/internal/clidoc"
)

// docs/COMMANDS.md holds every observer command and flag (-update
// rewrites its section, as it does the goldens), as cobra's doc
// package writes them from the commands themselves.
func TestCommandsDoc(t *testing.T) {
	a := &cli.App{Name: "observer", Version: "test", In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}}
	md, err := clidoc.Markdown(newRoot(a))
	if err != nil {
		t.Fatal(err)
	}
	if err := clidoc.Sync("../../docs/COMMANDS.md", "observer", md, *update); err != nil {
		t.Fatal(err)
	}
}

// Every observer command line of the README and the docs runs as written:
// a command that exists, flags it takes, the binary named bin/observer or
// observer.
func TestDocsCommandsRunAsWritten(t *testing.T) {
	files, err := clidoc.DocFiles("../..")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := clidoc.Examples("observer", files...)
	if err != nil || len(examples) == 0 {
		t.Fatalf("no observer command found in %v: %v", files, err)
	}
	for _, e := range examples {
		a := &cli.App{Name: "observer", In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}}
		if _, err := clidoc.Check(newRoot(a), e); err != nil {
			t.Error(err)
		}
	}
}
