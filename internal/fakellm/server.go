package fakellm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	// Body is the request body as received.
	Body json.RawMessage
}

// Server is a running fake provider. Its methods are safe for concurrent use.
type Server struct {
	srv    *httptest.Server
	script *Script
	done   chan struct{}
	close  sync.Once

	mu   sync.Mutex
	reqs []Request
	errs []error
}

// New starts a server answering from s. Close it when done; Start does that
// for a test.
func New(s *Script) *Server {
	fs := &Server{script: s, done: make(chan struct{})}
	fs.srv = httptest.NewServer(http.HandlerFunc(fs.serve))
	return fs
}

// Start starts a server for the test tb: it is closed when the test ends,
// and the test fails if the server saw a request its script did not expect.
func Start(tb testing.TB, s *Script) *Server {
	tb.Helper()
	fs := New(s)
	tb.Cleanup(func() {
		fs.Close()
		if err := fs.Err(); err != nil {
			tb.Errorf("%v", err)
		}
	})
	return fs
}

// URL is the server's base URL (no trailing slash). OpenAI clients take
// URL()+"/v1", Anthropic clients URL().
func (s *Server) URL() string { return s.srv.URL }

// Close ends delays in progress and shuts the server down.
func (s *Server) Close() {
	s.close.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Err reports the requests the script did not expect (each wraps
// ErrUnexpected), nil when there were none.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead {
		// A client's connectivity check (Claude Code sends HEAD / before
		// its first call): no API answers HEAD, so it takes no step and is
		// not recorded.
		w.WriteHeader(http.StatusOK)
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.reqs) + 1
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var problem error
	var st Step
	switch {
	case n > len(s.script.Steps):
		problem = fmt.Errorf("%w: request %d (%s %s), but script %q has %d steps", ErrUnexpected, n, r.Method, r.URL.Path, s.script.Name, len(s.script.Steps))
	default:
		st = s.script.Steps[n-1]
		want := cmp.Or(st.Path, s.script.Path)
		if want != "" && (r.URL.Path != want || r.Method != http.MethodPost) {
			problem = fmt.Errorf("%w: request %d is %s %s, step %d of script %q expects POST %s", ErrUnexpected, n, r.Method, r.URL.Path, n, s.script.Name, want)
		}
	}
	if problem != nil {
		s.errs = append(s.errs, problem)
	}
	s.mu.Unlock()

	if problem != nil {
		// 501 is not a status a provider retries: the run fails at once
		// and the test sees why.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotImplemented)
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "fakellm_unexpected", "message": problem.Error()}})
		_, _ = w.Write(b)
		return
	}
	if st.DelayMS > 0 {
		t := time.NewTimer(time.Duration(st.DelayMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
	st.write(w)
}

// write sends the step's answer.
func (st *Step) write(w http.ResponseWriter) {
	status := cmp.Or(st.Status, http.StatusOK)
	h := w.Header()
	for k, v := range st.Headers {
		h.Set(k, v)
	}
	if st.Kind == KindSSE {
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "text/event-stream")
		}
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(status)
		f, _ := w.(http.Flusher)
		for _, e := range st.Events {
			var data bytes.Buffer
			if err := json.Compact(&data, e.Data); err != nil {
				// Not JSON: OpenAI's closing [DONE], sent as it is.
				data.Reset()
				data.Write(e.Data)
			}
			if e.Event != "" {
				_, _ = fmt.Fprintf(w, "event: %s\n", e.Event)
			}
			_, _ = fmt.Fprintf(w, "data: %s\n\n", data.Bytes())
			if f != nil {
				f.Flush()
			}
		}
		return
	}
	body := []byte(st.BodyText)
	if len(st.Body) > 0 {
		body = st.Body
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "application/json")
		}
	} else if h.Get("Content-Type") == "" && len(body) > 0 {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if st.Kind != KindTruncate {
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	cut := st.TruncateAt
	if cut == 0 || cut >= len(body) {
		cut = len(body) / 2
	}
	w.WriteHeader(status)
	_, _ = w.Write(body[:cut])
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	// Aborting the handler closes the connection with the body short of
	// its Content-Length: the client reads an unexpected EOF.
	panic(http.ErrAbortHandler)
}
