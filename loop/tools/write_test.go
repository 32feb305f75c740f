package tools_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hookbus/hookbus/loop/tools"
)

func TestWrite(t *testing.T) {
	tr := newTree(t, map[string]string{"a.txt": "old\n"})
	write := tr.fs.Write()
	cases := []struct {
		name, path, content, want, file string
	}{
		{"create", "new.txt", "hello\n", "File created successfully at: new.txt", "new.txt"},
		{"create with parents", "d/e/f.txt", "deep", "File created successfully at: d/e/f.txt", "d/e/f.txt"},
		{"replace", "a.txt", "new\n", "The file a.txt has been updated.", "a.txt"},
		{"absolute inside", filepath.Join(tr.root, "abs.txt"), "x", "File created successfully at: " + filepath.Join(tr.root, "abs.txt"), "abs.txt"},
		{"empty content", "empty.txt", "", "File created successfully at: empty.txt", "empty.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := call(t, write, obj{"file_path": tc.path, "content": tc.content})
			if err != nil || got != tc.want {
				t.Fatalf("Write(%s) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
			if c := tr.read(t, tc.file); c != tc.content {
				t.Fatalf("%s holds %q, want %q", tc.file, c, tc.content)
			}
		})
	}
	t.Run("same content twice", func(t *testing.T) {
		for range 2 {
			if _, err := call(t, write, obj{"file_path": "twice.txt", "content": "same"}); err != nil {
				t.Fatal(err)
			}
		}
		if c := tr.read(t, "twice.txt"); c != "same" {
			t.Fatalf("twice.txt holds %q", c)
		}
		if !write.Spec().Idempotent {
			t.Fatal("Write is not marked idempotent")
		}
	})
	t.Run("keeps the mode and leaves no temporary file", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("file modes are Unix")
		}
		p := filepath.Join(tr.root, "script.sh")
		writeTestFile(t, p, "#!/bin/sh\n")
		if err := os.Chmod(p, 0o751); err != nil {
			t.Fatal(err)
		}
		if _, err := call(t, write, obj{"file_path": "script.sh", "content": "#!/bin/sh\necho hi\n"}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o751 {
			t.Fatalf("mode after Write = %v, %v; want 0751", fi.Mode(), err)
		}
		entries, _ := os.ReadDir(tr.root)
		for _, e := range entries {
			if filepath.Ext(e.Name()) != ".txt" && e.Name() != "script.sh" && e.Name() != "d" {
				t.Errorf("unexpected entry %q left in the root", e.Name())
			}
		}
	})
	t.Run("a symlink inside the root is written through", func(t *testing.T) {
		tr := newTree(t, map[string]string{"a.txt": "old"})
		tr.symlinks(t)
		if _, err := call(t, tr.fs.Write(), obj{"file_path": "inlink", "content": "via link"}); err != nil {
			t.Fatal(err)
		}
		if c := tr.read(t, "a.txt"); c != "via link" {
			t.Fatalf("a.txt holds %q", c)
		}
		if fi, err := os.Lstat(filepath.Join(tr.root, "inlink")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("inlink is no longer a symlink: %v, %v", fi.Mode(), err)
		}
	})
	t.Run("the root itself", func(t *testing.T) {
		if _, err := call(t, write, obj{"file_path": tr.root, "content": "x"}); !errors.Is(err, tools.ErrArguments) {
			t.Fatalf("Write(root) = %v, want ErrArguments", err)
		}
	})
}

func TestEdit(t *testing.T) {
	const start = "one two two three\n"
	cases := []struct {
		name string
		args obj
		want string // the result
		file string // the file after
		err  error
	}{
		{"unique", obj{"old_string": "one", "new_string": "1"}, "The file f.txt has been updated: 1 occurrence replaced.", "1 two two three\n", nil},
		{"replace all", obj{"old_string": "two", "new_string": "2", "replace_all": true}, "The file f.txt has been updated: all 2 occurrences replaced.", "one 2 2 three\n", nil},
		{"unique with replace_all", obj{"old_string": "three", "new_string": "3", "replace_all": true}, "The file f.txt has been updated: 1 occurrence replaced.", "one two two 3\n", nil},
		{"delete", obj{"old_string": " three", "new_string": ""}, "The file f.txt has been updated: 1 occurrence replaced.", "one two two\n", nil},
		{"not unique", obj{"old_string": "two", "new_string": "2"}, "", start, tools.ErrNotUnique},
		{"absent", obj{"old_string": "four", "new_string": "4"}, "", start, tools.ErrNoMatch},
		{"same strings", obj{"old_string": "one", "new_string": "one"}, "", start, tools.ErrArguments},
		{"empty old_string on a file with content", obj{"old_string": "", "new_string": "x"}, "", start, tools.ErrArguments},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t, map[string]string{"f.txt": start})
			tc.args["file_path"] = "f.txt"
			got, err := call(t, tr.fs.Edit(), tc.args)
			if tc.err != nil && !errors.Is(err, tc.err) || tc.err == nil && (err != nil || got != tc.want) {
				t.Fatalf("Edit(%v) = %q, %v; want %q, %v", tc.args, got, err, tc.want, tc.err)
			}
			if c := tr.read(t, "f.txt"); c != tc.file {
				t.Fatalf("f.txt holds %q, want %q", c, tc.file)
			}
		})
	}
	t.Run("empty old_string creates a missing file", func(t *testing.T) {
		tr := newTree(t, nil)
		got, err := call(t, tr.fs.Edit(), obj{"file_path": "n/new.txt", "old_string": "", "new_string": "fresh"})
		if err != nil || got != "File created successfully at: n/new.txt" || tr.read(t, "n/new.txt") != "fresh" {
			t.Fatalf("Edit create = %q, %v", got, err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		tr := newTree(t, nil)
		if _, err := call(t, tr.fs.Edit(), obj{"file_path": "gone.txt", "old_string": "a", "new_string": "b"}); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Edit(missing) = %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("not idempotent", func(t *testing.T) {
		if newTree(t, nil).fs.Edit().Spec().Idempotent {
			t.Fatal("Edit is marked idempotent")
		}
	})
}
