package modelhttp

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
)

// doer is an SDK's HTTPClient: what *http.Client implements.
type doer interface {
	Do(*http.Request) (*http.Response, error)
}

func TestSDKOptions(t *testing.T) {
	s := SDK[string, doer]{
		WithBaseURL:    func(u string) string { return "base " + u },
		WithAPIKey:     func(k string) string { return "key " + k },
		WithMaxRetries: func(n int) string { return fmt.Sprint("retries ", n) },
		WithHeader:     func(k, v string) string { return "header " + k + "=" + v },
		WithHTTPClient: func(d doer) string { return fmt.Sprintf("client %t", d == http.DefaultClient) },
	}
	got := s.Options(Client{BaseURL: "http://x", APIKey: "k1", HTTPClient: http.DefaultClient, Headers: map[string]string{"A": "b"}}, "more")
	want := []string{"base http://x", "retries 0", "key k1", "client true", "header A=b", "more"}
	if !slices.Equal(got, want) {
		t.Fatalf("options %q, want %q", got, want)
	}
	if got := s.Options(Client{BaseURL: "http://x"}); !slices.Equal(got, []string{"base http://x", "retries 0"}) {
		t.Fatalf("options without key, client or headers: %q", got)
	}
}
