package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
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

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		pos     []string
		session string
		err     string
	}{
		{[]string{"hello", "--session", "x"}, []string{"hello"}, "x", ""},
		{[]string{"--session", "x", "hello", "world"}, []string{"hello", "world"}, "x", ""},
		{[]string{"hello", "--session=x", "world", "-v"}, []string{"hello", "world"}, "x", ""},
		{[]string{"--", "-5", "--session", "x"}, []string{"-5", "--session", "x"}, "", ""},
		{[]string{"what", "is", "--", "-5"}, []string{"what", "is", "-5"}, "", ""},
		{[]string{"-"}, []string{"-"}, "", ""},
		{[]string{"what", "is", "-5"}, nil, "", "arguments that start with - go after --"},
	} {
		fs := flag.NewFlagSet("loop run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		session := fs.String("session", "", "")
		fs.Bool("v", false, "")
		pos, err := ParseInterspersed(fs, tc.args)
		if tc.err != "" {
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want a usage error saying %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(pos, tc.pos) || *session != tc.session {
			t.Errorf("%q: %q, session %q, %v; want %q, %q", tc.args, pos, *session, err, tc.pos, tc.session)
		}
	}
}

// Warnings print without -v, debug output only with it, as VerboseHelp
// says.
func TestLoggerLevels(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var b strings.Builder
		log := Logger(verbose, &b)
		log.Warn("a warning")
		log.Debug("a debug line")
		if !strings.Contains(b.String(), "a warning") || strings.Contains(b.String(), "a debug line") != verbose {
			t.Errorf("verbose %v: %q", verbose, b.String())
		}
	}
	if !strings.Contains(VerboseHelp, "warnings and errors always print") {
		t.Fatal("VerboseHelp does not say the rule")
	}
}
