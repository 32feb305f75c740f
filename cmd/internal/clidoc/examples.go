package clidoc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Example is a command line of the docs: a line of a sh, bash, console or
// shell code block that runs the binary.
type Example struct {
	// Where is FILE:LINE.
	Where string
	// Line is the command line as written.
	Line string
	// Args are its words after the binary's name, unquoted, up to the
	// first shell operator (|, >, &&, ;, &) or comment.
	Args []string
	// Path is how the binary was named ("loop", "bin/loop").
	Path string
}

var fence = regexp.MustCompile("^\\s*```(\\w*)")

// Examples returns the command lines of binary in the markdown files:
// in a code block whose lines are prompts ("$ "), the prompted lines only;
// env assignments before the binary (FOO=bar loop run) are skipped, and
// lines continued with a backslash are joined.
func Examples(binary string, files ...string) ([]Example, error) {
	var out []Example
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(string(raw), "\n")
		var block []int // the line numbers of the current shell block
		lang := ""
		in := false
		flush := func() {
			prompted := false
			for _, n := range block {
				prompted = prompted || strings.HasPrefix(strings.TrimSpace(lines[n]), "$ ")
			}
			for k := 0; k < len(block); k++ {
				n := block[k]
				l := strings.TrimSpace(lines[n])
				if prompted {
					if !strings.HasPrefix(l, "$ ") {
						continue
					}
					l = strings.TrimPrefix(l, "$ ")
				}
				for strings.HasSuffix(l, "\\") && k+1 < len(block) {
					k++
					l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[block[k]])
				}
				if e, ok := example(binary, l); ok {
					e.Where = fmt.Sprintf("%s:%d", f, n+1)
					out = append(out, e)
				}
			}
			block = nil
		}
		for n, l := range lines {
			if m := fence.FindStringSubmatch(l); m != nil {
				if in {
					if lang == "sh" || lang == "bash" || lang == "console" || lang == "shell" {
						flush()
					}
					in, block = false, nil
				} else {
					in, lang = true, m[1]
				}
				continue
			}
			if in {
				block = append(block, n)
			}
		}
	}
	return out, nil
}

// example reads a command line of binary, if line is one.
func example(binary, line string) (Example, bool) {
	words := split(line)
	for len(words) > 0 && (strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") || words[0] == "sudo") {
		words = words[1:]
	}
	if len(words) == 0 || filepath.Base(words[0]) != binary {
		return Example{}, false
	}
	return Example{Line: line, Path: words[0], Args: words[1:]}, true
}

// split splits a shell line into words: quotes removed, up to the first
// operator or comment.
func split(line string) []string {
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	end := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			end()
		case strings.ContainsRune("|&;><", r) || r == '#' && !inWord:
			end()
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	end()
	return words
}

// Check parses e as root would: its command must exist and its flags be
// the command's. It returns the command, its flags parsed.
func Check(root *cobra.Command, e Example) (*cobra.Command, error) {
	if e.Path != "bin/"+root.Name() && e.Path != root.Name() {
		return nil, fmt.Errorf("%s: %q runs %s: write bin/%s (as make build leaves it) or %s (on PATH, after make install)", e.Where, e.Line, e.Path, root.Name(), root.Name())
	}
	cmd, rest, err := root.Find(e.Args)
	if err != nil {
		return nil, fmt.Errorf("%s: %q: %v", e.Where, e.Line, err)
	}
	if cmd == root && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		return nil, fmt.Errorf("%s: %q: no command %q", e.Where, e.Line, rest[0])
	}
	if cmd.DisableFlagParsing {
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			return nil, fmt.Errorf("%s: %q: %s has no command %q", e.Where, e.Line, cmd.CommandPath(), rest[0])
		}
		return cmd, nil
	}
	// A flag that reads a file or a key as it is given (--witness-key
	// FILE) takes the docs' placeholder as it is.
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "bool", "string", "int", "int64", "float64", "duration", "count":
		default:
			f.Value = lenient{f.Value.Type()}
		}
	})
	if err := cmd.ParseFlags(rest); err != nil {
		return nil, fmt.Errorf("%s: %q: %v", e.Where, e.Line, err)
	}
	return cmd, nil
}

// lenient is a flag value that takes any word.
type lenient struct{ typ string }

func (l lenient) String() string   { return "" }
func (l lenient) Set(string) error { return nil }
func (l lenient) Type() string     { return l.typ }

// DocFiles are the markdown files whose commands must run as written:
// README.md, docs/*.md and deploy's, under the repository root dir.
func DocFiles(dir string) ([]string, error) {
	var out []string
	for _, pattern := range []string{"README.md", "docs/*.md", "deploy/*.md", "deploy/*/*.md", "deploy/*/*/*.md"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}
