package fakellm_test

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/internal/fakellm"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return res
}

func TestRecordingsParse(t *testing.T) {
	names := fakellm.Recordings()
	if len(names) < 10 {
		t.Fatalf("Recordings() = %v, want the recorded exchanges", names)
	}
	for _, n := range names {
		if _, err := fakellm.Recorded(n); err != nil {
			t.Errorf("Recorded(%q): %v", n, err)
		}
	}
	if _, err := fakellm.Recorded("nope/none"); !errors.Is(err, fakellm.ErrBadScript) {
		t.Errorf("Recorded(missing) = %v, want ErrBadScript", err)
	}
}

func TestParseRejects(t *testing.T) {
	for _, bad := range []string{
		``, `{}`, `{"steps":[]}`, `{"steps":[{"kind":"teleport"}]}`, `{"steps":[{"status":42}]}`,
		`{"steps":[{"kind":"sse"}]}`, `{"steps":[{"kind":"truncate"}]}`, `{"steps":[{"delay_ms":-1}]}`,
		`{"steps":[{"body":{"a":1},"body_text":"x"}]}`, `{"steps":[{"bogus":1}]}`,
	} {
		if _, err := fakellm.Parse([]byte(bad)); !errors.Is(err, fakellm.ErrBadScript) {
			t.Errorf("Parse(%s) = %v, want ErrBadScript", bad, err)
		}
	}
}

func TestServesStepsAndRecordsRequests(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("openai/server_error_then_success"))
	res := post(t, srv.URL()+fakellm.PathOpenAI, `{"n":1}`)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 500 || !strings.Contains(string(b), "server_error") {
		t.Fatalf("step 1 = %d %s", res.StatusCode, b)
	}
	res = post(t, srv.URL()+fakellm.PathOpenAI, `{"n":2}`)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("step 2 = %d %v", res.StatusCode, res.Header)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || string(reqs[0].Body) != `{"n":1}` || string(reqs[1].Body) != `{"n":2}` || reqs[1].Path != fakellm.PathOpenAI {
		t.Fatalf("Requests() = %+v", reqs)
	}
}

func TestUnexpectedRequests(t *testing.T) {
	srv := fakellm.New(fakellm.MustRecorded("openai/invalid_request"))
	defer srv.Close()
	res := post(t, srv.URL()+fakellm.PathAnthropic, `{}`)
	res.Body.Close()
	if res.StatusCode != http.StatusNotImplemented {
		t.Fatalf("wrong path: status %d, want 501", res.StatusCode)
	}
	res = post(t, srv.URL()+fakellm.PathOpenAI, `{}`)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 501 || !strings.Contains(string(b), "has 1 steps") {
		t.Fatalf("one too many: %d %s", res.StatusCode, b)
	}
	err := srv.Err()
	if !errors.Is(err, fakellm.ErrUnexpected) || !strings.Contains(err.Error(), "expects POST /v1/chat/completions") {
		t.Fatalf("Err() = %v", err)
	}
}

func TestTruncate(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("openai/truncated"))
	res := post(t, srv.URL()+fakellm.PathOpenAI, `{}`)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(b) != 90 {
		t.Fatalf("read %d bytes, err %v; want 90 and unexpected EOF", len(b), err)
	}
}

func TestSSE(t *testing.T) {
	srv := fakellm.Start(t, fakellm.MustRecorded("anthropic/streaming"))
	res := post(t, srv.URL()+fakellm.PathAnthropic, `{"stream":true}`)
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, e)
		}
	}
	if len(events) != 13 || events[0] != "message_start" || events[12] != "message_stop" {
		t.Fatalf("events = %v", events)
	}
}

func TestCloseEndsDelay(t *testing.T) {
	srv := fakellm.New(fakellm.MustRecorded("openai/slow"))
	done := make(chan error, 1)
	go func() {
		res, err := http.Post(srv.URL()+fakellm.PathOpenAI, "application/json", strings.NewReader(`{}`))
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	// Once the request is in, Close must end its 30 s delay at once.
	bustest.Eventuallyf(t, 10*time.Second, func() bool { return len(srv.Requests()) == 1 }, "the request arrives")
	srv.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the request still waits after Close")
	}
}
