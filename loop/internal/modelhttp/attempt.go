package modelhttp

import (
	"bytes"
	"errors"
	"io"
	"net/http"
)

// maxErrorBody bounds how much of an error answer's body is kept.
const maxErrorBody = 64 << 10

// Attempt watches the HTTP exchange of one model call: whether the request
// went out, the answer's status and headers, the body of an error answer, and
// whether reading the body failed part-way (a truncated answer). Install its
// Middleware on the SDK call; an Attempt serves one call and is not safe for
// concurrent use.
type Attempt struct {
	sent   bool
	status int
	header http.Header
	body   *watchedBody
}

// Middleware is an SDK middleware (openai-go's and anthropic-sdk-go's
// option.Middleware have this type) that records the exchange.
func (a *Attempt) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	a.sent = true
	res, err := next(req)
	if res == nil {
		return res, err
	}
	a.status, a.header = res.StatusCode, res.Header
	if res.Body != nil {
		a.body = &watchedBody{rc: res.Body, keep: res.StatusCode >= 400}
		res.Body = a.body
	}
	return res, err
}

// watchedBody passes a response body through, keeping a copy of an error
// answer's first bytes and the first read error other than io.EOF.
type watchedBody struct {
	rc   io.ReadCloser
	keep bool
	buf  bytes.Buffer
	err  error
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if b.keep && n > 0 && b.buf.Len() < maxErrorBody {
		b.buf.Write(p[:min(n, maxErrorBody-b.buf.Len())])
	}
	if err != nil && !errors.Is(err, io.EOF) && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.rc.Close() }
