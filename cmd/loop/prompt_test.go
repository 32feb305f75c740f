package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/cmd/internal/cli"
)

func TestPromptSources(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(file, []byte("  from a file\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty.txt")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file  string
		pos   []string
		stdin string
		want  string
		err   string
	}{
		{"", []string{"what", "is", "6*7?"}, "", "what is 6*7?", ""},
		{"", []string{"-"}, "from stdin\n", "from stdin", ""},
		{"-", nil, "  stdin via the flag \n", "stdin via the flag", ""},
		{file, nil, "", "from a file\nsecond line", ""},
		{"", nil, "", "", "no PROMPT given"},
		{"", []string{"-"}, "\n", "", "the prompt from stdin is empty"},
		{empty, nil, "", "", "the prompt from " + empty + " is empty"},
		{file, []string{"hi"}, "", "", "not both"},
		{"", []string{"a", "-"}, "", "", "stands alone"},
		{"/nonexistent/p.txt", nil, "", "", "--prompt-file: open /nonexistent/p.txt"},
		{"", []string{"-"}, "bad \xff bytes", "", "not valid UTF-8"},
	} {
		p := promptFlags{file: tc.file}
		got, err := p.read(tc.pos, strings.NewReader(tc.stdin))
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%+v: %q, %v; want %q", tc, got, err, tc.want)
		case tc.err != "" && (!errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%+v: %v; want a usage error saying %q", tc, err, tc.err)
		}
	}
}
