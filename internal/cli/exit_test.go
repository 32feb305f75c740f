package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		code   int
		err    error
		want   int
		stderr string
	}{
		{ExitOK, nil, ExitOK, ""},
		{3, nil, 3, ""},
		{ExitOK, ErrHelp, ExitOK, ""},
		{ExitOK, fmt.Errorf("%w: no PROMPT given", ErrUsage), ExitUsage, "loop run: usage: no PROMPT given\n"},
		{ExitOK, errors.New("boom"), ExitFailure, "loop run: boom\n"},
		{3, errors.New("boom"), 3, "loop run: boom\n"},
	} {
		var b strings.Builder
		if got := ExitCode(&b, "loop run", tc.code, tc.err); got != tc.want || b.String() != tc.stderr {
			t.Errorf("ExitCode(%d, %v) = %d, %q; want %d, %q", tc.code, tc.err, got, b.String(), tc.want, tc.stderr)
		}
	}
}

func TestParse(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Bool("v", false, "")
	if err := Parse(fs, []string{"-h"}); !errors.Is(err, ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if err := Parse(fs, []string{"--bogus"}); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("--bogus: %v", err)
	}
	if err := Parse(fs, []string{"-v", "extra"}); err != nil {
		t.Fatal(err)
	}
	if err := NoArgs(fs); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), `"extra"`) {
		t.Fatalf("NoArgs: %v", err)
	}
}
