package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// addresses returns the channel addresses of docs/asyncapi.yaml.
func addresses(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", AsyncAPIFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AsyncAPI string `yaml:"asyncapi"`
		Channels map[string]struct {
			Address *string `yaml:"address"`
		} `yaml:"channels"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.AsyncAPI, "3.0") {
		t.Fatalf("asyncapi %q, want 3.0", doc.AsyncAPI)
	}
	out := make(map[string]bool)
	for _, c := range doc.Channels {
		if c.Address != nil {
			out[*c.Address] = true
		}
	}
	return out
}

// Every subject events.Subjects builds, and every form its doc comment
// lists, is a channel of docs/asyncapi.yaml.
func TestAsyncAPIHasEverySubject(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	have := addresses(t)
	forms, err := subjectForms(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(forms) < 30 {
		t.Fatalf("only %d subject forms found in events.Subjects", len(forms))
	}
	for _, f := range forms {
		if !have[f.address] {
			t.Errorf("%s (events.Subjects.%s) is not a channel of %s: add it to cmd/internal/schemagen/asyncapi.go; %s", f.address, f.method, AsyncAPIFile, regenerate)
		}
	}
	listed, err := docForms(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) < 30 {
		t.Fatalf("only %d subject forms found in events.Subjects' doc comment", len(listed))
	}
	for _, f := range listed {
		if !have[f] {
			t.Errorf("%s (listed in events.Subjects' doc comment) is not a channel of %s: add it to cmd/internal/schemagen/asyncapi.go; %s", f, AsyncAPIFile, regenerate)
		}
	}
}

// The reference parser (@asyncapi/parser, from sdk/typescript's
// devDependencies) parses docs/asyncapi.yaml, its schemas resolved, without
// an error, and sees the same channels.
func TestAsyncAPIParses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipped: node is not on PATH (the AsyncAPI reference parser is a Node.js package)")
	}
	sdk := filepath.Join("..", "..", "..", "sdk", "typescript")
	if _, err := os.Stat(filepath.Join(sdk, "node_modules", "@asyncapi", "parser")); err != nil {
		t.Skip("skipped: @asyncapi/parser is not installed: run make sdk-ts (npm ci in sdk/typescript)")
	}
	doc, err := filepath.Abs(filepath.Join("..", "..", "..", AsyncAPIFile))
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(node, filepath.Join("scripts", "parse-asyncapi.mjs"), doc)
	cmd.Dir, cmd.Stdout, cmd.Stderr = sdk, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the AsyncAPI parser refuses %s (%v):\n%s", AsyncAPIFile, err, stderr.String())
	}
	var out struct {
		Version   string    `json:"version"`
		Addresses []*string `json:"addresses"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("parser output %q: %v", stdout.String(), err)
	}
	want := addresses(t)
	got := make(map[string]bool)
	for _, a := range out.Addresses {
		if a != nil {
			got[*a] = true
		}
	}
	if out.Version != "3.0.0" || len(got) != len(want) {
		t.Fatalf("the parser reads AsyncAPI %s with %d channel addresses, want 3.0.0 with %d", out.Version, len(got), len(want))
	}
	for a := range want {
		if !got[a] {
			t.Errorf("the parser does not see channel %s", a)
		}
	}
	t.Logf("parsed: %s", strings.TrimSpace(stderr.String()))
}
