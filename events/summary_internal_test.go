package events

import "testing"

// Every stage's payload says itself on one line: a new stage's payload type
// needs a summary method, else timelines print its raw JSON.
func TestEveryPayloadHasASummary(t *testing.T) {
	for _, st := range Stages() {
		p, err := PayloadFor(st)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.(summarizer); !ok {
			t.Errorf("%s: %T has no summary method", st, p)
		}
	}
}
