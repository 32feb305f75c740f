//go:build unix

package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/tools"
)

// specialTree is a root holding a regular file that matches "needle", and
// a FIFO, a socket and a character device (like /dev/zero; left out where
// mknod is not permitted), and symlinks to the FIFO and the device.
func specialTree(t *testing.T) (tr *tree, special []string) {
	t.Helper()
	tr = newTree(t, map[string]string{"a.txt": "needle\n"})
	if err := syscall.Mkfifo(filepath.Join(tr.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	special = append(special, "fifo")
	// A socket: net removes it on Close, so it stays until the cleanup.
	l, err := net.Listen("unix", filepath.Join(tr.root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	special = append(special, "sock")
	if err := syscall.Mknod(filepath.Join(tr.root, "zero"), syscall.S_IFCHR|0o644, 1<<8|5); err != nil {
		t.Logf("no device in the tree (mknod: %v): the device cases are skipped", err)
	} else {
		special = append(special, "zero")
		if err := os.Symlink("zero", filepath.Join(tr.root, "zerolink")); err != nil {
			t.Fatal(err)
		}
		special = append(special, "zerolink")
	}
	if err := os.Symlink("fifo", filepath.Join(tr.root, "fifolink")); err != nil {
		t.Fatal(err)
	}
	special = append(special, "fifolink")
	return tr, special
}

// callWithin calls tool and fails the test if it has not returned within
// d: a tool that blocks in a syscall is left behind, blocked.
func callWithin(t *testing.T, tool loop.Tool, args obj, d time.Duration) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := tool.Call(context.Background(), raw)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(d):
		t.Fatalf("%s %s has not returned after %v", tool.Spec().Name, raw, d)
		return "", nil
	}
}

// The file tools refuse FIFOs, devices and sockets at once, naming the
// path and what it is, without opening them for reading or writing: a FIFO
// would block the open forever, a device be read forever.
func TestFileToolsRefuseSpecialFiles(t *testing.T) {
	tr, special := specialTree(t)
	read, write, edit, glob, grep := tr.fs.Read(), tr.fs.Write(), tr.fs.Edit(), tr.fs.Glob(), tr.fs.Grep()
	readFile := tools.ReadFile(tr.root)
	for _, name := range special {
		cases := []struct {
			tool loop.Tool
			args obj
		}{
			{read, obj{"file_path": name}},
			{read, obj{"file_path": filepath.Join(tr.root, name)}},
			{write, obj{"file_path": name, "content": "x"}},
			{edit, obj{"file_path": name, "old_string": "a", "new_string": "b"}},
			{edit, obj{"file_path": name, "old_string": "", "new_string": "b"}},
			{glob, obj{"pattern": "*", "path": name}},
			{grep, obj{"pattern": "needle", "path": name}},
			{readFile, obj{"path": name}},
		}
		for _, tc := range cases {
			t.Run(tc.tool.Spec().Name+"/"+name, func(t *testing.T) {
				before, err := os.Lstat(filepath.Join(tr.root, name))
				if err != nil {
					t.Fatal(err)
				}
				out, err := callWithin(t, tc.tool, tc.args, 5*time.Second)
				if !errors.Is(err, tools.ErrNotRegular) {
					t.Fatalf("%v: %q, %v; want an error wrapping ErrNotRegular", tc.args, out, err)
				}
				if !strings.Contains(err.Error(), name) {
					t.Errorf("the error does not name %s: %v", name, err)
				}
				after, err := os.Lstat(filepath.Join(tr.root, name))
				if err != nil || after.Mode() != before.Mode() {
					t.Errorf("%s changed: %v, %v (was %v)", name, after, err, before.Mode())
				}
			})
		}
	}
	t.Run("the messages say what the file is", func(t *testing.T) {
		_, err := callWithin(t, read, obj{"file_path": "fifo"}, 5*time.Second)
		if err == nil || !strings.Contains(err.Error(), "named pipe (FIFO)") {
			t.Errorf("Read fifo: %v", err)
		}
		_, err = callWithin(t, read, obj{"file_path": "sock"}, 5*time.Second)
		if err == nil || !strings.Contains(err.Error(), "a socket") {
			t.Errorf("Read sock: %v", err)
		}
	})
}

// Glob and Grep walking a directory skip FIFOs, devices and sockets without
// opening them, and say which they left out.
func TestSearchesSkipSpecialFiles(t *testing.T) {
	tr, special := specialTree(t)
	got, err := callWithin(t, tr.fs.Grep(), obj{"pattern": "needle"}, 5*time.Second)
	if err != nil || !strings.HasPrefix(got, "Found 1 file\na.txt") {
		t.Fatalf("Grep = %q, %v; want a.txt found", got, err)
	}
	for _, name := range special {
		if !strings.Contains(got, name) {
			t.Errorf("Grep's note does not name %s:\n%s", name, got)
		}
	}
	if !strings.Contains(got, "not searched") {
		t.Errorf("Grep does not say it skipped entries:\n%s", got)
	}
	got, err = callWithin(t, tr.fs.Glob(), obj{"pattern": "*"}, 5*time.Second)
	if err != nil || !strings.HasPrefix(got, "a.txt\n") || !strings.Contains(got, "left out: fifo") {
		t.Fatalf("Glob = %q, %v; want a.txt listed and the special entries named as left out", got, err)
	}
	got, err = callWithin(t, tr.fs.Glob(), obj{"pattern": "*.txt"}, 5*time.Second)
	if err != nil || got != "a.txt" {
		t.Fatalf("Glob *.txt = %q, %v; want a.txt alone (no special entry matches)", got, err)
	}
}
