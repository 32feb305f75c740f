package tools

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
)

// skipDir reports the version-control directories Glob and Grep never enter,
// as Claude Code's Grep excludes them.
func skipDir(name string) bool {
	switch name {
	case ".git", ".svn", ".hg", ".bzr", ".jj", ".sl":
		return true
	}
	return false
}

// walked is one file found by walk.
type walked struct {
	path    string // relative to the root, slash form
	modTime time.Time
}

// walk is what walkFiles found.
type walk struct {
	files      []walked
	special    []walked // FIFOs, devices and sockets (or symlinks to them), not to be opened
	unreadable int      // entries it could not read (permission denied and the like)
}

// walkFiles lists the regular files under dir (relative to r), in lexical
// order, with their modification times. It does not enter version-control
// directories nor follow symlinked directories; a symlink to a file counts
// as that file when it stays inside the root and is skipped otherwise.
// Entries that are neither regular files nor directories (FIFOs, devices,
// sockets, or symlinks to them) are listed apart, for the caller to say it
// skipped them. Only directories are opened, through openPlain, so a FIFO
// swapped in for one is refused rather than waited on. It stops early when
// ctx ends.
func walkFiles(ctx context.Context, r *os.Root, dir string) (walk, error) {
	var w walk
	err := w.dir(ctx, r, dir, true)
	return w, err
}

// dir adds what the directory name holds, and what its subdirectories
// hold; a directory that cannot be read counts as unreadable, unless it is
// the top one (top), whose error is returned.
func (w *walk) dir(ctx context.Context, r *os.Root, name string, top bool) error {
	entries, err := readDir(r, name)
	if err != nil {
		if top {
			return err
		}
		if _, ok := isNotPlain(err); ok {
			w.special = append(w.special, walked{path: name}) // swapped in since it was listed
		} else {
			w.unreadable++
		}
		return nil
	}
	for _, d := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := d.Name()
		if name != "." {
			p = name + "/" + p
		}
		switch {
		case d.IsDir():
			if skipDir(d.Name()) {
				continue
			}
			if err := w.dir(ctx, r, p, false); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			fi, err := r.Stat(p)
			switch {
			case err != nil || fi.IsDir():
				// escapes the root, dangling, or a directory
			case !fi.Mode().IsRegular():
				w.special = append(w.special, walked{p, fi.ModTime()})
			default:
				w.files = append(w.files, walked{p, fi.ModTime()})
			}
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				w.unreadable++
				continue
			}
			w.files = append(w.files, walked{p, fi.ModTime()})
		default:
			w.special = append(w.special, walked{path: p})
		}
	}
	return nil
}

// readDir lists the directory name (relative to r), sorted by name. A FIFO,
// device or socket is openPlain's error, a file an error saying it is not
// a directory.
func readDir(r *os.Root, name string) ([]fs.DirEntry, error) {
	d, fi, err := openPlain(r, name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return cmp.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// newestFirst sorts files by modification time, the newest first, as
// Claude Code's Glob and Grep do; files of the same time by path.
func newestFirst(files []walked) {
	slices.SortStableFunc(files, func(a, b walked) int {
		return cmp.Or(b.modTime.Compare(a.modTime), cmp.Compare(a.path, b.path))
	})
}

// searchDir resolves the optional path argument of Glob and Grep to a path
// relative to the root, and reports whether it is a directory.
func (f *FS) searchDir(r *os.Root, tool, p string) (string, bool, error) {
	if p == "" {
		return ".", true, nil
	}
	name, err := f.rel(p)
	if err != nil {
		return "", false, err
	}
	fi, err := r.Stat(name)
	if err != nil {
		return "", false, f.wrap(p, err)
	}
	if !plain(fi.Mode()) {
		return "", false, fmt.Errorf("%s: %w", tool, notRegular(p, fi.Mode()))
	}
	return name, fi.IsDir(), nil
}

// under returns p relative to dir (both relative to the root).
func under(dir, p string) string {
	if dir == "." {
		return p
	}
	return strings.TrimPrefix(p, dir+"/")
}

// walkErr turns an error of walkFiles into the tool's error.
func (f *FS) walkErr(p string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return f.wrap(p, err)
}

// unreadableNote is the closing note of a search that could not read some
// entries.
func unreadableNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("\n(%d entries could not be read and were skipped)", n)
}
