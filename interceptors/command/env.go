package command

import (
	"fmt"
	"os"
	"strings"
)

// baseEnv names the variables every hook gets from the worker, as
// hookbus' Bash tool gives its commands.
var baseEnv = [...]string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM"}

// hookEnv builds a hook's environment: the base, CLAUDE_PROJECT_DIR, then
// the configured entries ("NAME" passes the worker's value, "NAME=value"
// sets one).
func hookEnv(root string, extra []string) ([]string, error) {
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, k := range baseEnv {
		if v, ok := os.LookupEnv(k); ok {
			set(k, v)
		}
	}
	if _, ok := vals["PATH"]; !ok {
		set("PATH", "/usr/local/bin:/usr/bin:/bin")
	}
	set("CLAUDE_PROJECT_DIR", root)
	for _, e := range extra {
		k, v, hasValue := strings.Cut(e, "=")
		if !validEnvName(k) {
			return nil, fmt.Errorf("%w: Env entry %q is not NAME or NAME=value", ErrConfig, e)
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

func validEnvName(s string) bool {
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
