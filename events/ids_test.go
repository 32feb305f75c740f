package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/events"
)

// Invisible characters and broken encodings are refused with what is wrong
// named: an id that looks like another must not pass.
func TestValidateIDInvisibleAndInvalid(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"ag\u200bent", "invisible or unprintable character U+200B"}, // zero-width space
		{"ag\u200dent", "U+200D"},                                    // zero-width joiner
		{"\ufeffagent", "U+FEFF"},                                    // byte-order mark
		{"agent\u202e", "U+202E"},                                    // right-to-left override
		{"agent\u00ad", "U+00AD"},                                    // soft hyphen
		{"agent\U000F0000", "U+F0000"},                               // private use
		{"ag\xffent", "is not valid UTF-8"},
		{"ag\xc3", "is not valid UTF-8"},
		{"a\u00a0b", "whitespace"}, // no-break space
	} {
		err := events.ValidateID("session", tc.id)
		if !errors.Is(err, events.ErrInvalidID) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "session id") {
			t.Errorf("ValidateID(%q) = %v; want ErrInvalidID saying %q", tc.id, err, tc.want)
		}
	}
	for _, ok := range []string{"café", "日本語", "a/b", "Ωmega-1", "emoji-🙂"} {
		if err := events.ValidateID("agent", ok); err != nil {
			t.Errorf("ValidateID(%q) = %v, want ok", ok, err)
		}
	}
}
