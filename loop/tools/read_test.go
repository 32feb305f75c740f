package tools_test

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/loop/tools"
)

func TestRead(t *testing.T) {
	long := strings.Repeat("x", 2100)
	var many strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	tr := newTree(t, map[string]string{
		"a.txt":       "alpha\nbeta\ngamma\n",
		"noeol.txt":   "one\ntwo",
		"empty.txt":   "",
		"long.txt":    long + "\nshort\n",
		"many.txt":    many.String(),
		"sub/b.txt":   "nested\n",
		"bin.dat":     "abc\x00def",
		"unicode.txt": "héllo wörld\n",
	})
	abs := filepath.Join(tr.root, "sub", "b.txt")
	cases := []struct {
		name string
		args obj
		want string
	}{
		{"whole file", obj{"file_path": "a.txt"}, "     1\talpha\n     2\tbeta\n     3\tgamma"},
		{"absolute path inside", obj{"file_path": abs}, "     1\tnested"},
		{"dot slash", obj{"file_path": "./sub/b.txt"}, "     1\tnested"},
		{"inner dot dot", obj{"file_path": "sub/../a.txt", "limit": 1}, "     1\talpha\n\n(lines 1-1 of 3 shown; read on with offset 2)"},
		{"no final newline", obj{"file_path": "noeol.txt"}, "     1\tone\n     2\ttwo"},
		{"offset", obj{"file_path": "a.txt", "offset": 2}, "     2\tbeta\n     3\tgamma"},
		{"offset and limit", obj{"file_path": "a.txt", "offset": 2, "limit": 1}, "     2\tbeta\n\n(lines 2-2 of 3 shown; read on with offset 3)"},
		{"offset zero is the start", obj{"file_path": "a.txt", "offset": 0, "limit": 1}, "     1\talpha\n\n(lines 1-1 of 3 shown; read on with offset 2)"},
		{"offset past the end", obj{"file_path": "a.txt", "offset": 9}, "(the file has 3 lines: offset 9 is past its end)"},
		{"empty file", obj{"file_path": "empty.txt"}, "(the file is empty)"},
		{"long line cut", obj{"file_path": "long.txt"}, "     1\t" + long[:2000] + " [... line cut: 100 more characters]\n     2\tshort"},
		{"unicode", obj{"file_path": "unicode.txt"}, "     1\théllo wörld"},
	}
	read := tr.fs.Read()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := call(t, read, tc.args)
			if err != nil || got != tc.want {
				t.Fatalf("Read(%v) =\n%q, %v\nwant\n%q", tc.args, got, err, tc.want)
			}
		})
	}

	t.Run("default limit of 2000 lines", func(t *testing.T) {
		got, err := call(t, read, obj{"file_path": "many.txt"})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(got, "\n")
		if lines[0] != "     1\tline 1" || lines[1999] != "  2000\tline 2000" {
			t.Fatalf("first and last lines: %q, %q", lines[0], lines[1999])
		}
		if want := "(lines 1-2000 of 2500 shown; read on with offset 2001)"; lines[len(lines)-1] != want {
			t.Fatalf("note = %q, want %q", lines[len(lines)-1], want)
		}
	})

	errCases := []struct {
		name string
		args obj
		want error
	}{
		{"missing file", obj{"file_path": "nope.txt"}, fs.ErrNotExist},
		{"directory", obj{"file_path": "sub"}, tools.ErrArguments},
		{"binary", obj{"file_path": "bin.dat"}, tools.ErrArguments},
		{"limit zero", obj{"file_path": "a.txt", "limit": 0}, tools.ErrArguments},
		{"negative offset", obj{"file_path": "a.txt", "offset": -1}, tools.ErrArguments},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := call(t, read, tc.args)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Read(%v) = %q, %v; want an error matching %v", tc.args, got, err, tc.want)
			}
		})
	}
}

func TestReadCutsLargeOutput(t *testing.T) {
	line := strings.Repeat("y", 1000)
	var b strings.Builder
	for range 300 {
		b.WriteString(line + "\n")
	}
	tr := newTree(t, map[string]string{"big.txt": b.String()})
	got, err := call(t, tr.fs.Read(), obj{"file_path": "big.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 100000+200 {
		t.Fatalf("result is %d characters, want about 100000 at most", len(got))
	}
	if !strings.Contains(got, "(output cut at 100000 characters: lines 1-99 of 300 shown; read on with offset 100)") {
		t.Fatalf("no cut note in the result's end: %q", got[len(got)-200:])
	}
}
