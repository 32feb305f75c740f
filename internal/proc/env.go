package proc

import (
	"fmt"
	"os"
	"strings"
)

// base names the variables every process gets from the worker.
var base = [...]string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM"}

// Env builds a minimal environment: the worker's base variables that are set
// (PATH defaults to /usr/local/bin:/usr/bin:/bin), then fixed ("NAME=value"
// entries the caller sets), then extra, the configured entries ("NAME"
// passes the worker's value when it has one, "NAME=value" sets one). A later
// entry replaces an earlier one of the same name in its place. An extra
// entry that is neither form is an error wrapping ErrEnv that names it.
func Env(fixed, extra []string) ([]string, error) {
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, k := range base {
		if v, ok := os.LookupEnv(k); ok {
			set(k, v)
		}
	}
	if _, ok := vals["PATH"]; !ok {
		set("PATH", "/usr/local/bin:/usr/bin:/bin")
	}
	for _, e := range fixed {
		k, v, _ := strings.Cut(e, "=")
		set(k, v)
	}
	for _, e := range extra {
		k, v, hasValue := strings.Cut(e, "=")
		if !validName(k) {
			return nil, fmt.Errorf("Env entry %q is %w", e, ErrEnv)
		}
		if !hasValue {
			var ok bool
			if v, ok = os.LookupEnv(k); !ok {
				continue
			}
		}
		set(k, v)
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
