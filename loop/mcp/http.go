package mcp

import (
	"context"
	"io"
	"net/http"
	"sync"
)

// httpTransport adds the configured headers to every request of one
// session, and ends them all when the session's cutoff context ends: the SDK
// waits for a request in flight (a cancellation notice to a server that
// does not answer) before a session is closed, and a failed handshake must
// not wait for it.
type httpTransport struct {
	base    http.RoundTripper
	headers map[string]string
	cutoff  context.Context
}

func (t *httpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.cutoff, cancel)
	req = req.Clone(ctx)
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: func() {
		stop()
		cancel()
	}}
	return resp, nil
}

// releasingBody releases its request's context when closed.
type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
