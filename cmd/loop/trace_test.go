package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loop run --trace prints the events as people read them: a tool call's
// arguments and a prompt as they were typed, without JSON's \u0026 for &
// or Go's \" for a quote.
func TestTraceReadable(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"agents.yaml": "agents:\n  - id: shell\n    model: scripted:script.json\n    tools: [calculator]\n",
		"script.json": `[{"content": "Running it.", "tool_calls": [{"name": "calculator", "arguments": {"expression": "ls -la && cat main.py > out.txt"}}]}, {"content": "done"}]`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"run", "--store", filepath.Join(dir, "store"), "--listen", "127.0.0.1:-1", "--agents", filepath.Join(dir, "agents.yaml"), "--agent", "shell",
		"--trace", `Run "ls" && tell me`}, strings.NewReader(""), &stdout, &stderr)
	trace := stderr.String()
	if code != exitOK {
		t.Fatalf("loop run: exit %d\n%s", code, trace)
	}
	for _, want := range []string{
		`tool.before        calculator{"expression":"ls -la && cat main.py > out.txt"}`,
		`intake             "Run "ls" && tell me"`,
	} {
		if !strings.Contains(trace, want) {
			t.Errorf("the trace does not show %s\n%s", want, trace)
		}
	}
	for _, escaped := range []string{`\u0026`, `\u003e`, `\"`} {
		if strings.Contains(trace, escaped) {
			t.Errorf("the trace shows %s\n%s", escaped, trace)
		}
	}
}
