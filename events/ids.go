package events

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// MaxIDLen is the longest id, in bytes, that ValidateID accepts.
const MaxIDLen = 128

// NewID returns a new ULID string: unique, and sortable by creation time.
func NewID() string { return ulid.Make().String() }

// ValidateID checks that id can stand as one NATS subject token. kind names
// the id in the error ("agent", "session", "plugin", ...). An empty id, one
// longer than MaxIDLen bytes, one that is not valid UTF-8, or one holding
// '.', '*', '>', whitespace, a control or format character (zero-width
// spaces and joiners, bidirectional marks: unicode.Cf) or U+FFFD is an
// error wrapping ErrInvalidID that names the id.
func ValidateID(kind, id string) error {
	if id == "" {
		return fmt.Errorf("%w: %s id is empty", ErrInvalidID, kind)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("%w: %s id %.32q... is %d bytes (max %d)", ErrInvalidID, kind, id, len(id), MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7F || c == '.' || c == '*' || c == '>' {
			return validateIDRunes(kind, id)
		}
	}
	return nil // printable ASCII without '.', '*' or '>': no rune to decode
}

// validateIDRunes is ValidateID's check rune by rune, for an id that is not
// plain printable ASCII.
func validateIDRunes(kind, id string) error {
	if !utf8.ValidString(id) {
		return fmt.Errorf("%w: %s id %q is not valid UTF-8", ErrInvalidID, kind, id)
	}
	for _, r := range id {
		switch {
		case r == '.' || r == '*' || r == '>':
			return fmt.Errorf("%w: %s id %q contains %q (not allowed in a subject token)", ErrInvalidID, kind, id, r)
		case unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar:
			return fmt.Errorf("%w: %s id %q contains whitespace or a control character", ErrInvalidID, kind, id)
		case unicode.Is(unicode.Cf, r) || !unicode.IsPrint(r):
			return fmt.Errorf("%w: %s id %q contains the invisible or unprintable character %U", ErrInvalidID, kind, id, r)
		}
	}
	return nil
}

// ValidateULID checks that id is a well-formed ULID (event ids, run ids
// minted by hookbus).
func ValidateULID(kind, id string) error {
	if _, err := ulid.ParseStrict(id); err != nil {
		return fmt.Errorf("%w: %s id %q is not a ULID: %v", ErrInvalidID, kind, id, err)
	}
	return nil
}
