package tools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// FS is the agent's root directory, to which the file tools (Read, Write,
// Edit, Glob, Grep) are confined. Every call opens the directory with
// os.Root, so a path that leaves it, by "..", by an absolute path elsewhere
// or through a symlink, is refused by the kernel-backed check of os.Root,
// not by string matching alone. See docs/AGENTS.md, "Tools".
type FS struct {
	dir  string // absolute, cleaned
	real string // dir with its symlinks resolved
	// escape is os.Root's own (unexported) error for a path that escapes,
	// taken from the root at NewFS so that errors can be matched with
	// errors.Is rather than by their text.
	escape error
}

// NewFS returns the file tools' view of root, which must be an existing
// directory. It returns an error wrapping ErrInvalidConfig otherwise.
func NewFS(root string) (*FS, error) {
	if root == "" {
		return nil, fmt.Errorf("%w: the root directory is empty", ErrInvalidConfig)
	}
	dir, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("%w: root %q: %v", ErrInvalidConfig, root, err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: root %q: %v", ErrInvalidConfig, root, err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: root %q: %v", ErrInvalidConfig, root, err)
	}
	defer r.Close()
	f := &FS{dir: dir, real: real}
	var pe *fs.PathError
	if _, err := r.Lstat(".."); errors.As(err, &pe) {
		f.escape = pe.Err
	}
	return f, nil
}

// rel turns a tool's path argument into a path relative to the root, in
// slash form, "." for the root itself. An absolute path must lie inside the
// root; a relative one is taken from the root and must not climb out of it
// lexically. Symlinks are checked later, by os.Root, when the path is used.
func (f *FS) rel(p string) (string, error) {
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		for _, base := range []string{f.dir, f.real} {
			r, err := filepath.Rel(base, c)
			if err == nil && (r == "." || filepath.IsLocal(r)) {
				return filepath.ToSlash(r), nil
			}
		}
		return "", fmt.Errorf("%w: %q is not inside %s", ErrPathEscape, p, f.dir)
	}
	if p == "" || p == "." {
		return ".", nil
	}
	if !filepath.IsLocal(p) {
		return "", fmt.Errorf("%w: %q", ErrPathEscape, p)
	}
	return path.Clean(filepath.ToSlash(p)), nil
}

// open opens the root for one call.
func (f *FS) open() (*os.Root, error) {
	r, err := os.OpenRoot(f.dir)
	if err != nil {
		return nil, fmt.Errorf("tools: open root %s: %w", f.dir, err)
	}
	return r, nil
}

// isEscape reports whether err is os.Root refusing a path that leaves it.
func (f *FS) isEscape(err error) bool {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return false
	}
	if f.escape != nil {
		return errors.Is(pe.Err, f.escape)
	}
	return strings.Contains(pe.Err.Error(), "escapes")
}

// wrap turns an error of an os.Root operation on the argument p into the
// tool's error: ErrPathEscape when the root refused it, ErrNotRegular for
// a FIFO, device or socket, ErrHardLink for a file of several hard links
// (openPlain), the error itself (still matching
// fs.ErrNotExist and the like) otherwise.
func (f *FS) wrap(p string, err error) error {
	if f.isEscape(err) {
		return fmt.Errorf("%w: %q", ErrPathEscape, p)
	}
	if m, ok := isNotPlain(err); ok {
		return notRegular(p, m)
	}
	if n, ok := isLinked(err); ok {
		return fmt.Errorf("%w: %s has %d hard links; the file tools refuse a file with other names, which may lie outside the working directory", ErrHardLink, p, n)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", p, pe.Err)
	}
	return err
}

// writeFile replaces the file name (relative to r) with data. A regular
// file is replaced atomically: data goes to a temporary file in the same
// directory, which is then renamed over it, keeping the old file's
// permissions, so a crash never leaves half a file. A symlink (to a file
// inside the root: r checks) is written through in place. A new file gets
// mode 0644 less the umask. Missing parent directories are created. A
// FIFO, device or socket (or a symlink to one) is refused (openPlain's
// error), neither written to nor replaced.
func writeFile(r *os.Root, name string, data []byte) error {
	perm, existed := fs.FileMode(0o644), false
	if fi, err := r.Lstat(name); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return writeThrough(r, name, data, perm)
		}
		if fi.IsDir() {
			return &fs.PathError{Op: "write", Path: name, Err: errors.New("is a directory")}
		}
		if !fi.Mode().IsRegular() {
			return &fs.PathError{Op: "write", Path: name, Err: &notPlainError{fi.Mode()}}
		}
		perm, existed = fi.Mode().Perm(), true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if dir := path.Dir(name); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(name), "."+path.Base(name)+".hookbus-"+hex.EncodeToString(rnd[:]))
	t, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := t.Write(data)
	if werr == nil && existed {
		werr = t.Chmod(perm) // keep the replaced file's mode, whatever the umask
	}
	if werr == nil {
		werr = t.Sync()
	}
	if cerr := t.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = r.Rename(tmp, name)
	}
	if werr != nil {
		_ = r.Remove(tmp)
	}
	return werr
}

// writeThrough writes data to the file the symlink name points to (inside
// the root), in place, creating it if it does not exist.
func writeThrough(r *os.Root, name string, data []byte, perm fs.FileMode) error {
	file, fi, err := openPlain(r, name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		file.Close()
		return &fs.PathError{Op: "write", Path: name, Err: errors.New("is a directory")}
	}
	_, werr := file.Write(data)
	if cerr := file.Close(); werr == nil {
		werr = cerr
	}
	return werr
}
