package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// globMaxFiles is how many files Glob lists, as Claude Code's Glob.
const globMaxFiles = 100

const globSchema = `{"type":"object","properties":{` +
	`"pattern":{"type":"string","description":"The glob pattern to match files against, e.g. \"**/*.go\" or \"src/**/*.{ts,tsx}\"."},` +
	`"path":{"type":"string","description":"The directory to search in (default: the working directory). Omit it rather than passing null."}` +
	`},"required":["pattern"],"additionalProperties":false}`

// Glob returns the "Glob" tool: {"pattern", "path"}. It lists the files
// under path (default the root) whose path relative to it matches pattern:
// "*", "?" and "[...]" within a segment, "**" for any number of segments,
// "{a,b}" alternatives. A pattern without "/" matches files directly in
// path only, as Claude Code's does. Results are paths relative to the root,
// the most recently modified first, at most 100; matching FIFOs, devices
// and sockets are not listed, and a note names them. Glob is idempotent.
func (f *FS) Glob() loop.Tool {
	return loop.ToolFunc(events.ToolSpec{
		Name: "Glob",
		Description: "Finds files by name pattern (\"**/*.js\", \"src/**/*.ts\") in the working directory. " +
			"Returns matching file paths, the most recently modified first.",
		Parameters: json.RawMessage(globSchema),
		Idempotent: true,
	}, f.glob)
}

func (f *FS) glob(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		Pattern *string `json:"pattern"`
		Path    string  `json:"path"`
	}
	if err := decodeArgs("Glob", raw, &a); err != nil {
		return "", err
	}
	if a.Pattern == nil || *a.Pattern == "" {
		return "", missing("Glob", "pattern")
	}
	pattern, err := f.relPattern(*a.Pattern)
	if err != nil {
		return "", err
	}
	g, err := compileGlob(pattern)
	if err != nil {
		return "", fmt.Errorf("%w: Glob: %v", ErrArguments, err)
	}
	r, err := f.open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	dir, isDir, err := f.searchDir(r, "Glob", a.Path)
	if err != nil {
		return "", err
	}
	if !isDir {
		return "", fmt.Errorf("%w: Glob: path %s is not a directory", ErrArguments, a.Path)
	}
	found, err := walkFiles(ctx, r, dir)
	if err != nil {
		return "", f.walkErr(a.Path, err)
	}
	matched := found.files[:0]
	for _, w := range found.files {
		if g.match(under(dir, w.path)) {
			matched = append(matched, w)
		}
	}
	var special []string
	for _, w := range found.special {
		if g.match(under(dir, w.path)) {
			special = append(special, w.path)
		}
	}
	notes := specialNote(special, "left out") + unreadableNote(found.unreadable)
	if len(matched) == 0 {
		return "No files found" + notes, nil
	}
	newestFirst(matched)
	var b strings.Builder
	for i, w := range matched {
		if i == globMaxFiles {
			break
		}
		b.WriteString(w.path)
		b.WriteByte('\n')
	}
	res := strings.TrimSuffix(b.String(), "\n")
	if len(matched) > globMaxFiles {
		res += fmt.Sprintf("\n(Results are truncated: %d files match, the %d most recent are shown. Use a more specific path or pattern.)", len(matched), globMaxFiles)
	}
	return res + notes, nil
}

// relPattern makes an absolute pattern relative to the root; a pattern
// outside the root, or climbing out of it with "..", wraps ErrPathEscape.
func (f *FS) relPattern(p string) (string, error) {
	if filepath.IsAbs(p) {
		s := filepath.ToSlash(p)
		found := false
		for _, base := range []string{f.dir, f.real} {
			b := strings.TrimSuffix(filepath.ToSlash(base), "/") + "/"
			if strings.HasPrefix(s, b) {
				p, found = strings.TrimPrefix(s, b), true
				break
			}
		}
		if !found {
			return "", fmt.Errorf("%w: pattern %q is not inside %s", ErrPathEscape, p, f.dir)
		}
	}
	if slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..") {
		return "", fmt.Errorf("%w: pattern %q", ErrPathEscape, p)
	}
	return strings.TrimPrefix(filepath.ToSlash(p), "./"), nil
}
