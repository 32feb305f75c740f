package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
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
// skipped them; nothing is opened but directories. It stops early when ctx
// ends.
func walkFiles(ctx context.Context, r *os.Root, dir string) (walk, error) {
	var w walk
	err := fs.WalkDir(r.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			w.unreadable++
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case d.IsDir():
			if p != dir && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			fi, err := r.Stat(p)
			switch {
			case err != nil || fi.IsDir():
				return nil // escapes the root, dangling, or a directory
			case !fi.Mode().IsRegular():
				w.special = append(w.special, walked{p, fi.ModTime()})
			default:
				w.files = append(w.files, walked{p, fi.ModTime()})
			}
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				w.unreadable++
				return nil
			}
			w.files = append(w.files, walked{p, fi.ModTime()})
		default:
			w.special = append(w.special, walked{path: p})
		}
		return nil
	})
	return w, err
}

// newestFirst sorts files by modification time, the newest first, as
// Claude Code's Glob and Grep do; files of the same time by path.
func newestFirst(files []walked) {
	sort.SliceStable(files, func(i, j int) bool {
		if !files[i].modTime.Equal(files[j].modTime) {
			return files[i].modTime.After(files[j].modTime)
		}
		return files[i].path < files[j].path
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
