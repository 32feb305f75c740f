package agents

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// syntaxError words a YAML syntax error of file name for a person, at the
// place the text stops being YAML: "ops.yaml:4:4: did not find expected
// '-' indicator", then the line with a caret under that column.
//
// The yaml package reports the line where the enclosing block began
// (counted from 0), not where the problem is: an indentation slip on line 4
// of a list that starts on line 2 reads "line 1". The place is found again
// here: the first line, then the first character of it, at which the text
// read so far fails with the same problem.
func syntaxError(data []byte, name string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%w: %s", ErrInvalid, describe(err, name, nil))
	}
	problem := yamlProblem(err)
	line, col := locate(data, problem)
	if line == 0 {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, name, err)
	}
	text := string(lineOf(data, line))
	hint := ""
	switch {
	case problem == "did not find expected '-' indicator", problem == "did not find expected key", problem == "did not find expected node content":
		hint = " (check the indentation of this line and of those above it: the entries of one list or mapping start in the same column)"
	case strings.HasPrefix(problem, "did not find expected ',' or"):
		hint = " (a [ or { on this line is not closed)"
	}
	return fmt.Errorf("%w: %s:%d:%d: %s%s\n    %s\n    %s^", ErrInvalid, name, line, col, problem, hint,
		strings.ReplaceAll(text, "\t", " "), strings.Repeat(" ", col-1))
}

// yamlProblem is a yaml error's text without its "yaml: line N: " prefix.
func yamlProblem(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(s, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			return rest[i+2:]
		}
	}
	return s
}

// locate returns the 1-based line and column (in characters) at which data
// fails to parse with problem: the shortest prefix that does. 0, 0 when
// none does (the problem is not one of syntax).
func locate(data []byte, problem string) (line, col int) {
	fails := func(prefix []byte) bool {
		var n yaml.Node
		err := yaml.Unmarshal(prefix, &n)
		return err != nil && yamlProblem(err) == problem
	}
	end := 0 // the end of the lines read so far
	for line = 1; end < len(data); line++ {
		start := end
		if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
			end = start + i + 1
		} else {
			end = len(data)
		}
		if !fails(data[:end]) {
			continue
		}
		for i := start; i < end; {
			_, size := utf8.DecodeRune(data[i:])
			i += size
			col++
			if fails(data[:i]) {
				return line, col
			}
		}
		return line, 1
	}
	return 0, 0
}

// lineOf is line n (1-based) of data, without its newline.
func lineOf(data []byte, n int) []byte {
	lines := bytes.Split(data, []byte("\n"))
	if n < 1 || n > len(lines) {
		return nil
	}
	return bytes.TrimRight(lines[n-1], "\r")
}
