package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookbus/hookbus/loop/tools"
)

func TestEvaluate(t *testing.T) {
	cases := []struct {
		expr string
		want float64
	}{
		{"6*7", 42}, {"1 + 2 * 3", 7}, {"(1+2)*3", 9}, {"-4 + 10 / 4", -1.5}, {"7 % 3", 1}, {"--2", 2}, {" 2.5*2 ", 5},
	}
	for _, tc := range cases {
		got, err := tools.Evaluate(tc.expr)
		if err != nil || got != tc.want {
			t.Errorf("Evaluate(%q) = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "1/0", "1 +", "(1", "2 $ 3", "1.2.3", "abc", "5 % 0"} {
		if _, err := tools.Evaluate(bad); !errors.Is(err, tools.ErrArguments) {
			t.Errorf("Evaluate(%q) = %v, want ErrToolArguments", bad, err)
		}
	}
}

func TestCalculatorTool(t *testing.T) {
	c := tools.Calculator()
	got, err := c.Call(context.Background(), json.RawMessage(`{"expression":"6*7"}`))
	if err != nil || got != "42" {
		t.Fatalf("calculator = %q, %v", got, err)
	}
	if _, err := c.Call(context.Background(), json.RawMessage(`[1]`)); !errors.Is(err, tools.ErrArguments) {
		t.Fatalf("calculator with bad args: %v", err)
	}
}

func TestClockTool(t *testing.T) {
	at := time.Date(2026, 11, 21, 9, 30, 0, 0, time.FixedZone("x", 3600))
	got, err := tools.Clock(func() time.Time { return at }).Call(context.Background(), nil)
	if err != nil || got != "2026-11-21T08:30:00Z" {
		t.Fatalf("clock = %q, %v", got, err)
	}
}

func TestReadFileConfined(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "a.txt"), []byte("nested"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	rf := tools.ReadFile(root)
	call := func(p string) (string, error) {
		b, _ := json.Marshal(map[string]string{"path": p})
		return rf.Call(context.Background(), b)
	}
	if got, err := call("notes.txt"); err != nil || got != "hello" {
		t.Fatalf("read notes.txt = %q, %v", got, err)
	}
	if got, err := call("sub/a.txt"); err != nil || got != "nested" {
		t.Fatalf("read sub/a.txt = %q, %v", got, err)
	}
	for _, p := range []string{"../secret", filepath.Join(outside, "secret"), "sub/../../x", "link"} {
		got, err := call(p)
		if !errors.Is(err, tools.ErrPathEscape) {
			t.Errorf("read %q = %q, %v; want ErrPathEscape", p, got, err)
		}
	}
	if _, err := call("missing.txt"); err == nil || errors.Is(err, tools.ErrPathEscape) {
		t.Errorf("missing file: %v", err)
	}
}
