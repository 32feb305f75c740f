// Package jsname holds JetStream's rules for the names hookbus gives its
// assets: the tokens of stream, bucket and consumer names, and durable
// consumer names.
package jsname

import (
	"fmt"
	"strings"

	"github.com/hookbus/hookbus/events"
)

// ValidToken reports whether s may be part of a stream or bucket name:
// JetStream bucket names allow only letters, digits, '_' and '-'.
func ValidToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// ValidDurable names what is wrong with name as a durable consumer name
// (kind says what it names, "durable"): a valid id with no path separator.
// Callers wrap the error with their invalid-option sentinel.
func ValidDurable(kind, name string) error {
	if err := events.ValidateID(kind, name); err != nil {
		return err
	}
	if strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("%s %q contains a path separator", kind, name)
	}
	return nil
}
