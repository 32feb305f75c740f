package tools_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/loop/tools"
)

// searchTree is the tree Glob and Grep search: its files from oldest to
// newest, a binary, and a .git directory.
func searchTree(t *testing.T) *tree {
	t.Helper()
	return newTree(t, map[string]string{
		"main.go":           "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n",
		"lib/util.go":       "package lib\n\n// Hello says hello.\nfunc Hello() string {\n\treturn \"hello\"\n}\n",
		"lib/util_test.go":  "package lib\n",
		"web/app.ts":        "const hello = 1;\n",
		"web/view.tsx":      "export const View = () => null;\n",
		"README.md":         "# Hello\n\nhello world\n",
		".hidden/conf.yaml": "hello: true\n",
		"bin/tool":          "hello\x00binary",
		".git/config":       "hello\n",
		"ctx.txt":           "a\nm1\nb\nc\nd\nm2\ne\n",
	}, "ctx.txt", "main.go", "lib/util.go", "lib/util_test.go", "web/app.ts", "web/view.tsx", "README.md", ".hidden/conf.yaml", "bin/tool", ".git/config")
}

func TestGlob(t *testing.T) {
	tr := searchTree(t)
	cases := []struct {
		name string
		args obj
		want string
	}{
		{"top level only", obj{"pattern": "*.go"}, "main.go"},
		{"double star, newest first", obj{"pattern": "**/*.go"}, "lib/util_test.go\nlib/util.go\nmain.go"},
		{"braces", obj{"pattern": "web/*.{ts,tsx}"}, "web/view.tsx\nweb/app.ts"},
		{"hidden files count", obj{"pattern": "**/*.yaml"}, ".hidden/conf.yaml"},
		{"in a directory", obj{"pattern": "*.go", "path": "lib"}, "lib/util_test.go\nlib/util.go"},
		{"in an absolute directory", obj{"pattern": "*_test.go", "path": filepath.Join(tr.root, "lib")}, "lib/util_test.go"},
		{"absolute pattern", obj{"pattern": filepath.Join(tr.root, "lib", "util.go")}, "lib/util.go"},
		{"question mark and class", obj{"pattern": "lib/util[._]?o"}, "lib/util.go"},
		{".git is skipped", obj{"pattern": "**/config"}, "No files found"},
		{"nothing", obj{"pattern": "**/*.rs"}, "No files found"},
		{"everything", obj{"pattern": "**"}, "bin/tool\n.hidden/conf.yaml\nREADME.md\nweb/view.tsx\nweb/app.ts\nlib/util_test.go\nlib/util.go\nmain.go\nctx.txt"},
	}
	glob := tr.fs.Glob()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := call(t, glob, tc.args)
			if err != nil || got != tc.want {
				t.Fatalf("Glob(%v) =\n%s, %v\nwant\n%s", tc.args, got, err, tc.want)
			}
		})
	}
	for _, bad := range []obj{{"pattern": "[", "path": ""}, {"pattern": "*.go", "path": "main.go"}} {
		if got, err := call(t, glob, bad); !errors.Is(err, tools.ErrArguments) {
			t.Errorf("Glob(%v) = %q, %v; want ErrArguments", bad, got, err)
		}
	}
}

func TestGlobCapsResults(t *testing.T) {
	files := map[string]string{}
	var order []string
	for i := range 120 {
		p := fmt.Sprintf("f%03d.txt", i)
		files[p], order = "x", append(order, p)
	}
	tr := newTree(t, files, order...)
	got, err := call(t, tr.fs.Glob(), obj{"pattern": "*.txt"})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	if len(lines) != 101 || lines[0] != "f119.txt" || lines[99] != "f020.txt" {
		t.Fatalf("got %d lines, first %q, 100th %q", len(lines), lines[0], lines[min(99, len(lines)-1)])
	}
	if want := "(Results are truncated: 120 files match, the 100 most recent are shown. Use a more specific path or pattern.)"; lines[100] != want {
		t.Fatalf("note = %q", lines[100])
	}
}

func TestGrep(t *testing.T) {
	tr := searchTree(t)
	cases := []struct {
		name string
		args obj
		want string
	}{
		{"files with matches, newest first", obj{"pattern": "hello"},
			"Found 5 files\n.hidden/conf.yaml\nREADME.md\nweb/app.ts\nlib/util.go\nmain.go"},
		{"explicit mode", obj{"pattern": "hello", "output_mode": "files_with_matches", "glob": "*.go"},
			"Found 2 files\nlib/util.go\nmain.go"},
		{"content, case-insensitive", obj{"pattern": "hello", "-i": true, "output_mode": "content", "path": "README.md"},
			"README.md:1:# Hello\nREADME.md:3:hello world"},
		{"content without line numbers", obj{"pattern": "world", "-n": false, "output_mode": "content"},
			"README.md:hello world"},
		{"count", obj{"pattern": "hello", "output_mode": "count", "glob": "*.go"},
			"lib/util.go:2\nmain.go:1\n\nFound 3 total occurrences across 2 files."},
		{"type", obj{"pattern": "const", "type": "ts"}, "Found 2 files\nweb/view.tsx\nweb/app.ts"},
		{"glob with a slash", obj{"pattern": "package", "glob": "lib/*_test.go"}, "Found 1 file\nlib/util_test.go"},
		{"negated glob", obj{"pattern": "hello", "glob": "!*.go !*.md"}, "Found 2 files\n.hidden/conf.yaml\nweb/app.ts"},
		{"comma-separated globs", obj{"pattern": "hello", "glob": "*.md,*.ts"}, "Found 2 files\nREADME.md\nweb/app.ts"},
		{"commas and braces", obj{"pattern": "hello|const", "glob": "*.{ts,tsx},*.md"}, "Found 3 files\nREADME.md\nweb/view.tsx\nweb/app.ts"},
		{"in a directory", obj{"pattern": "hello", "path": "lib"}, "Found 1 file\nlib/util.go"},
		{"context", obj{"pattern": "func Hello", "output_mode": "content", "-C": 1},
			"lib/util.go-3-// Hello says hello.\nlib/util.go:4:func Hello() string {\nlib/util.go-5-\treturn \"hello\""},
		{"context groups", obj{"pattern": "^m", "output_mode": "content", "context": 1, "path": "ctx.txt"},
			"ctx.txt-1-a\nctx.txt:2:m1\nctx.txt-3-b\n--\nctx.txt-5-d\nctx.txt:6:m2\nctx.txt-7-e"},
		{"after and before", obj{"pattern": "^m2", "output_mode": "content", "-A": 1, "-B": 2, "path": "ctx.txt"},
			"ctx.txt-4-c\nctx.txt-5-d\nctx.txt:6:m2\nctx.txt-7-e"},
		{"multiline", obj{"pattern": `Hello\(\) string \{\s+return`, "multiline": true, "output_mode": "content"},
			"lib/util.go:4:func Hello() string {\nlib/util.go:5:\treturn \"hello\""},
		{"no multiline without the flag", obj{"pattern": `\{\s+return`, "output_mode": "content"}, "No matches found"},
		{"head_limit", obj{"pattern": "hello", "head_limit": 2},
			"Found 5 files\n.hidden/conf.yaml\nREADME.md\n\n[Showing results with pagination = limit: 2, offset: 0; 5 entries in all]"},
		{"offset", obj{"pattern": "hello", "head_limit": 1, "offset": 1},
			"Found 5 files\nREADME.md\n\n[Showing results with pagination = limit: 1, offset: 1; 5 entries in all]"},
		{"no limit", obj{"pattern": "hello", "head_limit": 0, "glob": "*.go"}, "Found 2 files\nlib/util.go\nmain.go"},
		{"no files", obj{"pattern": "nowhere"}, "No files found"},
		{"no content", obj{"pattern": "nowhere", "output_mode": "content"}, "No matches found"},
		{"binary file named", obj{"pattern": "hello", "path": "bin/tool"}, "No files found\n(the file is binary and was not searched)"},
		{".git is skipped", obj{"pattern": "hello", "glob": "config"}, "No files found"},
	}
	grep := tr.fs.Grep()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := call(t, grep, tc.args)
			if err != nil || got != tc.want {
				t.Fatalf("Grep(%v) =\n%s, %v\nwant\n%s", tc.args, got, err, tc.want)
			}
		})
	}
	for _, bad := range []obj{
		{"pattern": "("},
		{"pattern": "x", "output_mode": "lines"},
		{"pattern": "x", "type": "cobol"},
		{"pattern": "x", "-A": -1},
		{"pattern": "x", "head_limit": -5},
		{"pattern": "x", "glob": "["},
	} {
		if got, err := call(t, grep, bad); !errors.Is(err, tools.ErrArguments) {
			t.Errorf("Grep(%v) = %q, %v; want ErrArguments", bad, got, err)
		}
	}
}

func TestGrepCutsLongLines(t *testing.T) {
	tr := newTree(t, map[string]string{"wide.txt": "needle" + strings.Repeat("-", 600) + "\n"})
	got, err := call(t, tr.fs.Grep(), obj{"pattern": "needle", "output_mode": "content"})
	want := "wide.txt:1:needle" + strings.Repeat("-", 494) + " [... line cut: 106 more characters]"
	if err != nil || got != want {
		t.Fatalf("Grep = %q, %v\nwant %q", got, err, want)
	}
}
