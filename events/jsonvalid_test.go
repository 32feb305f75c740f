package events

import (
	"encoding/json"
	"strings"
	"testing"
)

var jsonCases = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":1,}`, `[1,2,]`, `[1 2]`, `{"a" 1}`, `{a:1}`,
	`"x"`, `"\u00e9\n\"\\\/\b\f\r\t"`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"a\tb\"", "\"\xff\xfe\"",
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-`, `1e`, `-1.25e-10`, `+1`,
	`true`, `tru`, `false`, `null`, `nul`, `nullx`, `[true,false,null]`, ` {"a" : [ 1 , {"b":null} ] } `,
	`{"a":1}}`, `[[]`, `]`, `{"a":}`, `{"a":1 "b":2}`, `{,}`, `[,]`, "[1]\x00", "\r\n[1]\t",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	for _, c := range jsonCases {
		if got, want := ValidJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("ValidJSON(%.40q) = %v, json.Valid = %v", c, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range jsonCases {
		if len(c) < 200 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("ValidJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	d, _ := json.Marshal(map[string]any{"call": map[string]string{"id": "c1"}, "result": map[string]any{"content": strings.Repeat("x", 1024), "n": 1.5}})
	b.SetBytes(int64(len(d)))
	for b.Loop() {
		if !ValidJSON(d) {
			b.Fatal("invalid")
		}
	}
}

// TestValidJSONSpecialBytesAtEveryOffset puts each byte that matters inside
// a string at every offset of the 8-byte fast path.
func TestValidJSONSpecialBytesAtEveryOffset(t *testing.T) {
	for n := 0; n < 40; n++ {
		for p := 0; p < n; p++ {
			for _, c := range []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xff, 'x'} {
				s := []byte(`"` + strings.Repeat("a", n) + `"`)
				s[1+p] = c
				if got, want := ValidJSON(s), json.Valid(s); got != want {
					t.Fatalf("ValidJSON(%q) = %v, json.Valid = %v", s, got, want)
				}
			}
		}
	}
}
