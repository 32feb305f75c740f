package interceptors

import (
	"fmt"
	"path"
	"strings"
)

// Matchers are path.Match globs ("fs_*", "support-?", "[a-c]*"), with
// alternatives separated by "|" ("fs_*|bash"). The empty glob matches
// everything. Tool names and agent ids hold no "/", so "*" matches any name.

// validateGlob reports a malformed glob or an empty alternative.
func validateGlob(glob string) error {
	if glob == "" {
		return nil
	}
	for rest := glob; ; {
		alt, tail, more := strings.Cut(rest, "|")
		if alt == "" {
			return fmt.Errorf("glob %q has an empty alternative", glob)
		}
		if _, err := path.Match(alt, ""); err != nil {
			return fmt.Errorf("glob %q: %q is malformed: %v", glob, alt, err)
		}
		if !more {
			return nil
		}
		rest = tail
	}
}

// matchGlob reports whether name matches one of glob's alternatives. It does
// not allocate.
func matchGlob(glob, name string) bool {
	if glob == "" {
		return true
	}
	for rest := glob; ; {
		alt, tail, more := strings.Cut(rest, "|")
		if ok, _ := path.Match(alt, name); ok {
			return true
		}
		if !more {
			return false
		}
		rest = tail
	}
}
