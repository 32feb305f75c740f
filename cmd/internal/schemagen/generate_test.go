package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
)

// regenerate says how to bring docs/schema up to date.
const regenerate = "regenerate with: go generate ./cmd/internal/schemagen (then cd sdk/typescript && npm run gen, for the TypeScript types)"

// docs/schema is what the Go types give now.
func TestSchemasInSync(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	want, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, OutDir)
	have, err := existing(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range have {
		if _, ok := want[name]; !ok {
			t.Errorf("%s/%s is no longer generated: %s", OutDir, name, regenerate)
		}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		switch {
		case os.IsNotExist(err):
			t.Errorf("%s/%s is missing: %s", OutDir, name, regenerate)
		case err != nil:
			t.Fatal(err)
		case !bytes.Equal(got, want[name]):
			t.Errorf("%s/%s differs from what the Go types give (first difference at line %d): %s", OutDir, name, firstDiff(got, want[name]), regenerate)
		}
	}
}

// docs/asyncapi.yaml is what the Go types give now.
func TestAsyncAPIInSync(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	want, err := GenerateAsyncAPI(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, AsyncAPIFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the Go types give (first difference at line %d): %s", AsyncAPIFile, firstDiff(got, want), regenerate)
	}
}

func firstDiff(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// The envelope and the headers schemas name every attribute events writes,
// and nothing else.
func TestEnvelopeNamesEveryAttribute(t *testing.T) {
	e, err := events.New(events.StageToolBefore, events.Meta{
		Source: "hookbus/loop", AgentID: "a", SessionID: "s", RunID: "r", Step: 1, Seq: 2, Subject: "bash",
		Traceparent:   "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		ParentAgentID: "pa", ParentSessionID: "ps", ParentRunID: "pr", Time: time.Now(),
	}, events.ToolBefore{Call: events.ToolCall{ID: "c", Name: "bash"}})
	if err != nil {
		t.Fatal(err)
	}
	e.DataRef, e.PrevHash, e.Signer, e.Signature = "hookbus_payloads/evt/x/y", strings.Repeat("0", 64), "A"+strings.Repeat("B", 55), "sig"
	doc, err := json.Marshal(e.CloudEvent())
	if err != nil {
		t.Fatal(err)
	}
	var structured map[string]any
	if err := json.Unmarshal(doc, &structured); err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range structured {
		names = append(names, k)
	}
	h, _, err := events.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	var headerNames []string
	for k := range h {
		headerNames = append(headerNames, k)
	}
	for _, x := range []struct {
		file string
		have []string
	}{
		{CloudEventFile, names},
		{EventHeadersFile, headerNames},
	} {
		props := properties(t, x.file)
		slices.Sort(props)
		slices.Sort(x.have)
		if !slices.Equal(props, x.have) {
			t.Errorf("%s names %v; an event with every attribute set has %v", x.file, props, x.have)
		}
	}
}

// properties lists the top-level properties of a generated schema.
func properties(t *testing.T, file string) []string {
	t.Helper()
	files, err := Generate(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(files[file], &s); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range s.Properties {
		out = append(out, k)
	}
	return out
}
