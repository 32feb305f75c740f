package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
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

// app runs a root command with one subcommand, "run", that takes
// --session and positional arguments (args is what it was given).
func app(t *testing.T, argv ...string) (code int, args []string, session, stdout, stderr string) {
	t.Helper()
	var out, errOut strings.Builder
	a := &App{Name: "loop", Out: &out, Err: &errOut, In: strings.NewReader("")}
	root := a.NewRoot("test", "")
	root.AddCommand(Command("run [flags] PROMPT", "runs", "", func(fs *pflag.FlagSet) Run {
		fs.StringVar(&session, "session", "", "")
		return func(_ context.Context, pos []string) error {
			args = pos
			return nil
		}
	}))
	root.AddCommand(Command("list", "lists", "", func(fs *pflag.FlagSet) Run {
		return func(_ context.Context, pos []string) error { return NoArgs(nil, pos) }
	}))
	code = a.Execute(context.Background(), root, argv)
	return code, args, session, out.String(), errOut.String()
}

// -h is help (exit 0), a mistake in the flags or arguments a usage error
// (exit 2) naming it.
func TestParse(t *testing.T) {
	if code, _, _, out, _ := app(t, "run", "-h"); code != ExitOK || !strings.Contains(out, "--session") {
		t.Fatalf("-h: %d %q", code, out)
	}
	if code, _, _, _, errOut := app(t, "run", "--bogus"); code != ExitUsage || !strings.Contains(errOut, "flag provided but not defined: -bogus") {
		t.Fatalf("--bogus: %d %q", code, errOut)
	}
	if code, _, _, _, errOut := app(t, "run", "--session"); code != ExitUsage || !strings.Contains(errOut, "flag needs an argument: --session") {
		t.Fatalf("--session without a value: %d %q", code, errOut)
	}
	if code, args, _, _, _ := app(t, "run", "-v", "extra"); code != ExitOK || !slices.Equal(args, []string{"extra"}) {
		t.Fatalf("-v extra: %d %q", code, args)
	}
	if code, _, _, _, errOut := app(t, "list", "extra"); code != ExitUsage || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Fatalf("NoArgs: %d %q", code, errOut)
	}
	if code, _, _, _, errOut := app(t, "fly"); code != ExitUsage || !strings.Contains(errOut, `unknown command "fly" for "loop"`) {
		t.Fatalf("an unknown command: %d %q", code, errOut)
	}
	if code, _, _, _, errOut := app(t, "rnu"); code != ExitUsage || !strings.Contains(errOut, "(did you mean run?)") {
		t.Fatalf("a mistyped command: %d %q", code, errOut)
	}
	if code, _, _, _, errOut := app(t, "run", "--sesion", "x"); code != ExitUsage || !strings.Contains(errOut, "(did you mean --session?)") {
		t.Fatalf("a mistyped flag: %d %q", code, errOut)
	}
	if code, _, _, _, errOut := app(t); code != ExitUsage || !strings.Contains(errOut, "Usage:") {
		t.Fatalf("no command: %d %q", code, errOut)
	}
	if code, _, _, _, errOut := app(t, "run", "--log-format", "xml"); code != ExitUsage || !strings.Contains(errOut, `--log-format "xml"`) {
		t.Fatalf("a bad log format: %d %q", code, errOut)
	}
}

// Flags may come before, between and after the positional arguments;
// everything after "--" is positional; an undefined flag that may be a
// word of a prompt ("-5") says to put such words after "--".
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
		code, pos, session, _, errOut := app(t, append([]string{"run"}, tc.args...)...)
		if tc.err != "" {
			if code != ExitUsage || !strings.Contains(errOut, tc.err) {
				t.Errorf("%q: %d %q, want a usage error saying %q", tc.args, code, errOut, tc.err)
			}
			continue
		}
		if code != ExitOK || !slices.Equal(pos, tc.pos) || session != tc.session {
			t.Errorf("%q: %q, session %q, exit %d %s; want %q, %q", tc.args, pos, session, code, errOut, tc.pos, tc.session)
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
