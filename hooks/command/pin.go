package command

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A command hook runs as the worker's user, outside any sandbox. The agent
// can write its root (its file tools, its Bash, sandboxed or not), so a
// script there that a hook runs would run whatever the agent last wrote. A
// hook therefore pins, when it is built (when the worker starts), every
// file its command names inside the root: the SHA-256 of a file's content,
// or that a named path did not exist. Before each run the pins are checked,
// and a hook whose files changed does not run (ErrChanged).

// pinned is one path a hook's command names inside the agent's root, as it
// was when the hook was built.
type pinned struct {
	path   string
	absent bool              // the path did not exist
	kind   fs.FileMode       // its type bits: 0 for a regular file
	sum    [sha256.Size]byte // a regular file's content's digest
}

// pins returns what command (a shell command line, or with exec the
// program, followed by args) names inside root, lexically or once its
// symlinks are resolved, with words expanded by env's variables: every
// existing file a word names (relative words from the root), and the
// absence of what runs (shellWords) where it does not exist. Words after a
// redirection that writes (>, >>) are what the hook writes, not what it
// runs, and are left out; so are options (-x, --x=...). A directory is not
// pinned. It returns an error wrapping ErrInvalidConfig when a named file
// cannot be read.
func pins(root, command string, args []string, exec bool, env []string) ([]pinned, error) {
	var words []word
	if exec {
		words = []word{{text: command, run: true}}
		script := interpreters[filepath.Base(command)]
		for _, a := range args {
			run := script && !strings.HasPrefix(a, "-")
			words = append(words, word{text: a, run: run, script: run})
			script = script && !run
		}
	} else {
		words = shellWords(command, envMap(env))
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		realRoot = root
	}
	var out []pinned
	seen := map[string]bool{}
	for _, wd := range words {
		w := wd.text
		if w == "" || strings.HasPrefix(w, "-") {
			continue
		}
		p := w
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		p = filepath.Clean(p)
		if seen[p] {
			continue
		}
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err != nil && !wd.run:
			continue // not there, and not what runs: an argument such as "hello"
		case err != nil && !strings.Contains(w, "/") && !wd.script:
			continue // a program found in PATH, not in the root
		}
		if !within(root, p) && !within(realRoot, resolved(p)) {
			continue
		}
		seen[p] = true
		pn, err := pinPath(p)
		if err != nil {
			return nil, fmt.Errorf("%w: the hook's file %s: %w", ErrInvalidConfig, p, err)
		}
		out = append(out, pn)
	}
	return out, nil
}

// pinPath pins p as it is now: its content's digest, its absence, or, for
// what is not a regular file (a FIFO, a device), its type only: nothing
// blocks on a FIFO put in a script's place.
func pinPath(p string) (pinned, error) {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(p); errors.Is(lerr, fs.ErrNotExist) {
			return pinned{path: p, absent: true}, nil
		}
	}
	if err != nil {
		return pinned{}, err
	}
	if !fi.Mode().IsRegular() {
		return pinned{path: p, kind: fi.Mode().Type()}, nil
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return pinned{}, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return pinned{}, err
	}
	if !fi.Mode().IsRegular() {
		return pinned{path: p, kind: fi.Mode().Type()}, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return pinned{}, err
	}
	pn := pinned{path: p}
	h.Sum(pn.sum[:0])
	return pn, nil
}

// check returns an error wrapping ErrChanged, naming the path and what
// became of it, when p is no longer as pinned.
func (p pinned) check() error {
	now, err := pinPath(p.path)
	switch {
	case err != nil && p.absent:
		return fmt.Errorf("%w: %s did not exist when the worker started and now does (%v)", ErrChanged, p.path, err)
	case err != nil:
		return fmt.Errorf("%w: %s cannot be read: %v", ErrChanged, p.path, err)
	case p.absent && !now.absent:
		return fmt.Errorf("%w: %s did not exist when the worker started and now does", ErrChanged, p.path)
	case !p.absent && now.absent:
		return fmt.Errorf("%w: %s was removed", ErrChanged, p.path)
	case p.kind != now.kind:
		return fmt.Errorf("%w: %s is no longer the same kind of file (%v when the worker started, %v now)", ErrChanged, p.path, p.kind, now.kind)
	case !bytes.Equal(p.sum[:], now.sum[:]):
		return fmt.Errorf("%w: the content of %s changed (sha256 %x when the worker started, %x now)", ErrChanged, p.path, p.sum, now.sum)
	}
	return nil
}

// within reports whether p is root or under it (both clean and absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolved is p with its symlinks resolved, as far as they exist.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(p)
	if dir == p || dir == "" {
		return p
	}
	return filepath.Join(resolved(filepath.Clean(dir)), base)
}

// envMap indexes an environment of NAME=value entries.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		if k, v, ok := strings.Cut(e, "="); ok {
			m[k] = v
		}
	}
	return m
}
