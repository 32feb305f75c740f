package proc

import (
	"errors"
	"slices"
	"testing"
)

func TestEnv(t *testing.T) {
	t.Setenv("HOME", "/home/w")
	t.Setenv("SECRET_TOKEN", "s3cret")
	t.Setenv("PASSED", "yes")
	env, err := Env([]string{"CLAUDE_PROJECT_DIR=/srv/a"}, []string{"PASSED", "ABSENT_VAR", "MODE=ci", "HOME=/tmp/h"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HOME=/tmp/h", "CLAUDE_PROJECT_DIR=/srv/a", "PASSED=yes", "MODE=ci"} {
		if !slices.Contains(env, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}
	for _, e := range env {
		if e == "SECRET_TOKEN=s3cret" || e == "ABSENT_VAR=" {
			t.Errorf("env has %q", e)
		}
	}
	if _, err := Env(nil, []string{"1BAD=x"}); !errors.Is(err, ErrEnv) {
		t.Fatalf("bad name: %v, want ErrEnv", err)
	}
}
