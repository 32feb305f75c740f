//go:build unix

package command_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/hooks/command"
)

// A FIFO put in a pinned script's place is a change, seen without opening
// it for a read that would block.
func TestPinnedScriptReplacedByAFIFO(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "run.sh")
	writeFile(t, p, "#!/bin/sh\nexit 0\n")
	h := newHook(t, command.Config{Root: root}, claudecode.PreToolUse, `{"type":"command","command":"./run.sh"}`)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Run(context.Background(), &claudecode.Input{}); !errors.Is(err, command.ErrChanged) {
		t.Fatalf("Run with a FIFO in the script's place: %v; want ErrChanged", err)
	}
}
