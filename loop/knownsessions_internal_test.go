package loop

import (
	"strings"
	"testing"
)

// The set of known sessions forgets the least recently used beyond its
// bounds, by count and by bytes; a nil set knows nothing.
func TestKnownSessionsBounds(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name     string
		max      int
		maxBytes int
		add      []string
		touch    string // looked up before the last add
		want     []string
		gone     []string
	}{
		{"by count", 2, 1 << 20, []string{"a", "b", "c"}, "", []string{"b", "c"}, []string{"a"}},
		{"recently used kept", 2, 1 << 20, []string{"a", "b", "c"}, "a", []string{"a", "c"}, []string{"b"}},
		{"by bytes", 100, 2 * len(sessionKey("demo", long+"1")), []string{long + "1", long + "2", long + "3"}, "", []string{long + "2", long + "3"}, []string{long + "1"}},
		{"added twice", 2, 1 << 20, []string{"a", "a", "b"}, "", []string{"a", "b"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKnownSessions(tc.max, tc.maxBytes)
			for i, s := range tc.add {
				if i == len(tc.add)-1 && tc.touch != "" {
					k.has("demo", tc.touch)
				}
				k.add("demo", s)
			}
			for _, s := range tc.want {
				if !k.has("demo", s) {
					t.Errorf("%.10s... forgotten", s)
				}
			}
			for _, s := range tc.gone {
				if k.has("demo", s) {
					t.Errorf("%.10s... kept", s)
				}
			}
			if k.len() != len(tc.want) || k.bytes > tc.maxBytes {
				t.Errorf("%d sessions, %d bytes; want %d, at most %d bytes", k.len(), k.bytes, len(tc.want), tc.maxBytes)
			}
		})
	}
	var off *knownSessions = newKnownSessions(-1, 0)
	off.add("demo", "a")
	if off != nil || off.has("demo", "a") || off.len() != 0 {
		t.Error("a set made with -1 remembers")
	}
}
