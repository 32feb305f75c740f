package claudecode_test

import (
	"testing"

	"github.com/hookbus/hookbus/hooks/claudecode"
)

// A handler object is read strictly: an unknown field is refused naming it
// and the fields read, and so is another type's object.
func TestDecodeHandler(t *testing.T) {
	type webhook struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers,omitempty"`
		Once    bool
		skipped bool
		Ignored string `json:"-"`
	}
	for raw, want := range map[string]string{
		`{"type":"http","url":"http://x"}`:       "",
		`{"url":"http://x"}`:                     "",
		`{"type":"http","url":"http://x","x":1}`: `http handler: json: unknown field "x" (hookbus reads type, url, headers, Once)`,
		`{"type":"command"}`:                     `handler of type "command", not http`,
		`[1]`:                                    `http handler: json: cannot unmarshal array into Go value of type claudecode_test.webhook (hookbus reads type, url, headers, Once)`,
	} {
		var h webhook
		err := claudecode.DecodeHandler([]byte(raw), claudecode.TypeHTTP, &h)
		if got := errText(err); got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
		if err == nil && (h.URL != "http://x" || h.skipped) {
			t.Errorf("%s: read %+v", raw, h)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
