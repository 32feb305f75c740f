package tools

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/loop"
)

// Limits of Grep: Claude Code's default head_limit and ripgrep's
// --max-columns as Claude Code sets it; files larger than grepMaxFile are
// skipped (and named in the result), results cut at grepMaxOutput
// characters.
const (
	grepDefaultHeadLimit = 250
	grepMaxColumns       = 500
	grepMaxFile          = 64 << 20
	grepMaxOutput        = 100000
)

const grepSchema = `{"type":"object","properties":{` +
	`"pattern":{"type":"string","description":"The regular expression to search file contents for (RE2 syntax, close to ripgrep's)."},` +
	`"path":{"type":"string","description":"The file or directory to search (default: the working directory)."},` +
	`"glob":{"type":"string","description":"Only search files matching this glob, e.g. \"*.js\" or \"*.{ts,tsx}\" (rg --glob); several may be separated by spaces, \"!\" excludes."},` +
	`"type":{"type":"string","description":"Only search files of this type (rg --type): go, js, ts, py, rust, java, c, cpp, md, json, yaml, sh..."},` +
	`"output_mode":{"type":"string","enum":["content","files_with_matches","count"],"default":"files_with_matches","description":"content: matching lines; files_with_matches: paths of matching files (default); count: matching lines per file."},` +
	`"-i":{"type":"boolean","description":"Case-insensitive search (rg -i)."},` +
	`"-n":{"type":"boolean","description":"Show line numbers (rg -n); output_mode content only. Default true."},` +
	`"-A":{"type":"integer","minimum":0,"description":"Lines to show after each match (rg -A); output_mode content only."},` +
	`"-B":{"type":"integer","minimum":0,"description":"Lines to show before each match (rg -B); output_mode content only."},` +
	`"-C":{"type":"integer","minimum":0,"description":"Lines to show before and after each match (rg -C); output_mode content only."},` +
	`"context":{"type":"integer","minimum":0,"description":"Same as -C."},` +
	`"head_limit":{"type":"integer","minimum":0,"description":"Show only the first N lines or entries (default 250; 0 for no limit)."},` +
	`"offset":{"type":"integer","minimum":0,"description":"Skip the first N lines or entries before head_limit applies (default 0)."},` +
	`"multiline":{"type":"boolean","description":"Let patterns span lines and . match newlines (rg -U --multiline-dotall). Default false."}` +
	`},"required":["pattern"],"additionalProperties":false}`

type grepArgs struct {
	Pattern    *string `json:"pattern"`
	Path       string  `json:"path"`
	Glob       string  `json:"glob"`
	Type       string  `json:"type"`
	OutputMode string  `json:"output_mode"`
	I          bool    `json:"-i"`
	N          *bool   `json:"-n"`
	A          *int    `json:"-A"`
	B          *int    `json:"-B"`
	C          *int    `json:"-C"`
	Context    *int    `json:"context"`
	HeadLimit  *int    `json:"head_limit"`
	Offset     *int    `json:"offset"`
	Multiline  bool    `json:"multiline"`
}

// Grep returns the "Grep" tool, Claude Code's ripgrep-shaped search with
// Go's regexp (RE2): {"pattern", "path", "glob", "type", "output_mode",
// "-i", "-n", "-A", "-B", "-C", "context", "head_limit", "offset",
// "multiline"}. It skips binary files (a NUL byte) and version-control
// directories; .gitignore is not read. FIFOs, devices and sockets are not
// opened: a path naming one is an error wrapping ErrNotRegular, and those
// met in a directory are named in a note. The result formats are described
// in docs/AGENTS.md. Grep is idempotent.
func (f *FS) Grep() loop.Tool {
	return loop.ToolFunc(events.ToolSpec{
		Name: "Grep",
		Description: "Searches file contents in the working directory with a regular expression. " +
			"Filter files with glob or type; output_mode content shows matching lines, files_with_matches (the default) the files, count the counts.",
		Parameters: json.RawMessage(grepSchema),
		Idempotent: true,
	}, f.grep)
}

// grepSearch is one Grep call, its arguments checked.
type grepSearch struct {
	re            *regexp.Regexp
	prefilter     *regexp.Regexp // nil when the per-line pattern cannot be tried on a whole file first
	mode          string
	lineNumbers   bool
	before, after int
	multiline     bool
}

func (f *FS) grep(ctx context.Context, raw json.RawMessage) (string, error) {
	var a grepArgs
	if err := decodeArgs("Grep", raw, &a); err != nil {
		return "", err
	}
	if a.Pattern == nil || *a.Pattern == "" {
		return "", missing("Grep", "pattern")
	}
	s, err := newGrepSearch(&a)
	if err != nil {
		return "", err
	}
	filter, err := newFileFilter(a.Glob, a.Type)
	if err != nil {
		return "", err
	}
	r, err := f.open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	dir, isDir, err := f.searchDir(r, "Grep", a.Path)
	if err != nil {
		return "", err
	}
	var files []walked
	var special []string
	unreadable := 0
	if isDir {
		found, err := walkFiles(ctx, r, dir)
		if err != nil {
			return "", f.walkErr(a.Path, err)
		}
		unreadable = found.unreadable
		for _, w := range found.files {
			if filter.match(under(dir, w.path)) {
				files = append(files, w)
			}
		}
		for _, w := range found.special {
			if filter.match(under(dir, w.path)) {
				special = append(special, w.path)
			}
		}
	} else {
		fi, err := r.Stat(dir)
		if err != nil {
			return "", f.wrap(a.Path, err)
		}
		files = []walked{{dir, fi.ModTime()}}
	}
	var res grepResult
	for _, w := range files {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		data, skip, err := readSearchable(r, w.path)
		if _, ok := isNotPlain(err); ok {
			if !isDir {
				return "", fmt.Errorf("Grep: %w", f.wrap(a.Path, err))
			}
			special = append(special, w.path) // swapped in since the walk
			continue
		}
		if err != nil {
			unreadable++
			continue
		}
		if skip != "" {
			if skip == "large" {
				res.tooLarge = append(res.tooLarge, w.path)
			} else if !isDir {
				res.binary = true
			}
			continue
		}
		s.searchFile(&res, w, data)
	}
	return res.format(s.mode, a.HeadLimit, a.Offset) + specialNote(special, "not searched") + unreadableNote(unreadable), nil
}

func newGrepSearch(a *grepArgs) (*grepSearch, error) {
	if err := nonNegative("Grep", intField{"-A", a.A}, intField{"-B", a.B}, intField{"-C", a.C},
		intField{"context", a.Context}, intField{"head_limit", a.HeadLimit}, intField{"offset", a.Offset}); err != nil {
		return nil, err
	}
	s := &grepSearch{mode: a.OutputMode, lineNumbers: a.N == nil || *a.N, multiline: a.Multiline}
	switch s.mode {
	case "":
		s.mode = "files_with_matches"
	case "content", "files_with_matches", "count":
	default:
		return nil, fmt.Errorf("%w: Grep: output_mode must be content, files_with_matches or count, not %q", ErrArguments, a.OutputMode)
	}
	if c := cmp.Or(a.Context, a.C); c != nil {
		s.before, s.after = *c, *c
	}
	if a.B != nil {
		s.before = *a.B
	}
	if a.A != nil {
		s.after = *a.A
	}
	flags := ""
	if a.I {
		flags += "i"
	}
	if a.Multiline {
		flags += "ms"
	}
	expr := *a.Pattern
	if flags != "" {
		expr = "(?" + flags + ")" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: Grep: pattern %q: %v", ErrArguments, *a.Pattern, err)
	}
	s.re = re
	// A line matches only if the whole file does under (?m), except for
	// patterns that anchor on the text's ends or turn multi-line mode off.
	if !a.Multiline && !strings.Contains(expr, `\A`) && !strings.Contains(expr, `\z`) && !strings.Contains(expr, "-m") {
		s.prefilter, _ = regexp.Compile("(?m)" + expr)
	}
	return s, nil
}

// readSearchable reads a file for Grep; skip is "large" or "binary" for a
// file Grep does not search. A FIFO, device or socket is openPlain's error.
func readSearchable(r *os.Root, name string) (data []byte, skip string, err error) {
	file, fi, err := openPlain(r, name, os.O_RDONLY, 0)
	if err != nil {
		return nil, "", err
	}
	defer file.Close()
	if fi.IsDir() {
		return nil, "", &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	if fi.Size() > grepMaxFile {
		return nil, "large", nil
	}
	data, err = io.ReadAll(io.LimitReader(file, grepMaxFile+1))
	if err != nil {
		return nil, "", err
	}
	if len(data) > grepMaxFile {
		return nil, "large", nil // grown since its Stat
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, "binary", nil
	}
	return data, "", nil
}

// searchFile records the matching lines of one file.
func (s *grepSearch) searchFile(res *grepResult, w walked, data []byte) {
	if s.prefilter != nil && !s.prefilter.Match(data) {
		return
	}
	lines := splitLines(data)
	matched := s.matchingLines(data, lines)
	if len(matched) == 0 {
		return
	}
	res.files = append(res.files, w)
	res.counts = append(res.counts, len(matched))
	res.total += len(matched)
	if s.mode != "content" {
		return
	}
	isMatch := make(map[int]bool, len(matched))
	for _, i := range matched {
		isMatch[i] = true
	}
	withContext := s.before > 0 || s.after > 0
	last := -1 // the last line of this file printed
	for _, m := range matched {
		from, to := max(m-s.before, last+1), min(m+s.after, len(lines)-1)
		if from > to {
			continue
		}
		// ripgrep's "--" between groups of lines that do not follow on.
		if withContext && len(res.lines) > 0 && (last < 0 || from != last+1) {
			res.lines = append(res.lines, "--")
		}
		for i := from; i <= to; i++ {
			sep := "-"
			if isMatch[i] {
				sep = ":"
			}
			res.lines = append(res.lines, s.formatLine(w.path, i, sep, lines[i]))
		}
		last = to
	}
}

func (s *grepSearch) formatLine(p string, i int, sep, text string) string {
	if n := len([]rune(text)); n > grepMaxColumns {
		text = cutRunes(text, grepMaxColumns) + fmt.Sprintf(" [... line cut: %d more characters]", n-grepMaxColumns)
	}
	if s.lineNumbers {
		return fmt.Sprintf("%s%s%d%s%s", p, sep, i+1, sep, text)
	}
	return p + sep + text
}

// splitLines splits data into lines without their "\n"; a final "\n" does
// not start another line.
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// matchingLines returns the indexes of the lines that match, in order.
func (s *grepSearch) matchingLines(data []byte, lines []string) []int {
	var out []int
	if !s.multiline {
		for i, l := range lines {
			if s.re.MatchString(l) {
				out = append(out, i)
			}
		}
		return out
	}
	starts := make([]int, len(lines)) // byte offset of each line
	off := 0
	for i, l := range lines {
		starts[i] = off
		off += len(l) + 1
	}
	lineOf := func(b int) int {
		lo, hi := 0, len(starts)-1
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if starts[mid] <= b {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		return lo
	}
	next := 0 // lines below next are already recorded
	for _, m := range s.re.FindAllIndex(data, -1) {
		first, last := lineOf(m[0]), lineOf(max(m[0], m[1]-1))
		if last >= len(lines) {
			last = len(lines) - 1
		}
		for i := max(first, next); i <= last; i++ {
			out = append(out, i)
		}
		next = max(next, last+1)
	}
	return out
}
