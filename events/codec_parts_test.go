package events

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The pieces of the direct codec, each held to what it stands for:
// parseTimeUTC to time.Parse, ValidateID's ASCII shortcut to its rune loop,
// plainSource's shortcut to the URI round trip. ValidJSON is held to
// json.Valid in jsonvalid_test.go.

func TestParseTimeUTCMatchesTimeParse(t *testing.T) {
	for _, s := range []string{
		"2024-01-02T03:04:05Z", "2024-01-02T03:04:05.5Z", "2024-01-02T03:04:05.000000001Z",
		"2024-02-29T23:59:59.123456789Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z",
		"2024-01-02T24:00:00Z", "2024-01-02T03:04:60Z", "2024-01-02T03:04:05.Z", "2024-01-02T03:04:05.1234567890Z",
		"2024-01-02T03:04:05+01:00", "2024-01-02 03:04:05Z", "0000-01-01T00:00:00Z", "2024-04-31T00:00:00Z",
		"1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "2024-01-02T03:04:05,5Z", "2024-1-02T03:04:05Z",
	} {
		want, werr := time.Parse(time.RFC3339Nano, s)
		got, ok := parseTimeUTC(s)
		if ok && (werr != nil || !reflect.DeepEqual(got, want)) {
			t.Errorf("parseTimeUTC(%q) = %v, time.Parse = %v, %v", s, got, want, werr)
		}
		if !ok && werr == nil && strings.HasSuffix(s, "Z") && !strings.Contains(s, ",") {
			t.Logf("parseTimeUTC(%q) defers to time.Parse", s)
		}
	}
}

func FuzzParseTimeUTC(f *testing.F) {
	f.Add("2024-01-02T03:04:05.123Z")
	f.Add("2024-02-29T23:59:59Z")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTimeUTC(s)
		if !ok {
			return
		}
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("parseTimeUTC(%q) = %v, time.Parse = %v, %v", s, got, want, err)
		}
	})
}

// validIDRef is ValidateID's answer as the rune loop alone gives it.
func validIDRef(id string) bool {
	return id != "" && len(id) <= MaxIDLen && validateIDRunes("x", id) == nil
}

func TestValidateIDMatchesRunes(t *testing.T) {
	for _, id := range []string{"", "a", "agent-1", "a.b", "a*", "a>", "a b", "a\tb", "é", "a\u00a0b", "a\u0085", "\x7f", "\xff", "a\ufffd", "~!@#$%^&()_+=[]{}|;:'\",<?/`", strings.Repeat("x", MaxIDLen), strings.Repeat("x", MaxIDLen+1)} {
		if got, want := ValidateID("x", id) == nil, validIDRef(id); got != want {
			t.Errorf("ValidateID(%q) ok = %v, the rune loop says %v", id, got, want)
		}
	}
}

func FuzzValidID(f *testing.F) {
	f.Add("agent-1")
	f.Add("a.b")
	f.Add("a\u00a0b")
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidateID("x", id) == nil, validIDRef(id); got != want {
			t.Fatalf("ValidateID(%q) ok = %v, the rune loop says %v", id, got, want)
		}
	})
}

// FuzzPlainSource holds plainSource's shortcut to the URI round trip it
// stands for.
func FuzzPlainSource(f *testing.F) {
	for _, s := range []string{"hookbus/loop", "https://example.com/x?y=1", "//host/x", "has space", "HTTP://Example.com/%7Ex", "a:b", "./x", "~a/-b_c.d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		want := err == nil && u.String() == s && strings.TrimSpace(s) != ""
		if got := plainSource(s); got != want {
			t.Fatalf("plainSource(%q) = %v, the URI round trip says %v", s, got, want)
		}
	})
}
