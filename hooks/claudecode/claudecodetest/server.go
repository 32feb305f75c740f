package claudecodetest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/hooks/claudecode"
	"github.com/hookbus/hookbus/interceptors"
)

// Serve starts an HTTP server (stopped by t.Cleanup) that answers Claude
// Code hook inputs POSTed to it as an http hook server would, by asking ic:
// the input becomes its stage's event (Input.ToHookbus), ic decides within
// reg's timeout (the Request's Deadline), and the decision is answered as
// Claude Code's output (claudecode.Answer), status 200. An error, a panic
// or a decision the stage refuses is answered with status 500 and the
// failure's text. It returns the server's URL.
func Serve(t *testing.T, reg interceptors.Registration, ic interceptors.Interceptor) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, code, err := answer(r.Context(), reg, ic, body)
		if err != nil {
			http.Error(w, err.Error(), code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func answer(ctx context.Context, reg interceptors.Registration, ic interceptors.Interceptor, body []byte) ([]byte, int, error) {
	in, err := claudecode.ParseInput(body)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	m, err := in.ToHookbus()
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	ev, err := events.New(m.Stage, events.Meta{Source: "claudecodetest", AgentID: "agent-1", SessionID: in.SessionID,
		RunID: events.NewID(), Step: 1, Subject: m.Subject}, m.Payload)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	timeout := reg.WithDefaults().Timeout
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := cctx.Deadline()
	type result struct {
		d   *interceptors.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- result{err: fmt.Errorf("panic: %v", v)}
			}
		}()
		d, err := ic.Intercept(cctx, &interceptors.Request{Stage: ev.Stage, Event: ev, Registration: reg, Deadline: deadline})
		done <- result{d, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-cctx.Done():
		// The caller's deadline, which started before this one, passes
		// first: wait for it to give up rather than race it with an
		// answer of our own.
		grace := time.NewTimer(5 * time.Second)
		defer grace.Stop()
		select {
		case res = <-done:
		case <-ctx.Done():
			return nil, http.StatusGatewayTimeout, fmt.Errorf("no answer within %s", timeout)
		case <-grace.C:
			return nil, http.StatusGatewayTimeout, fmt.Errorf("no answer within %s", timeout)
		}
	}
	if res.err != nil {
		return nil, http.StatusInternalServerError, res.err
	}
	// One-interceptor chain: applies the decision (a patch, data) to the
	// payload and checks it, as the caller's chain will.
	chain := interceptors.NewChain()
	if _, err := chain.Register(interceptors.Registration{Plugin: "served", Stage: ev.Stage, Timeout: time.Second},
		interceptors.Func(func(context.Context, *interceptors.Request) (*interceptors.Decision, error) { return res.d, nil })); err != nil {
		return nil, http.StatusInternalServerError, err
	}
	out, err := chain.Run(ctx, ev)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	if f := out.Records[0].Failure; f != nil {
		return nil, http.StatusInternalServerError, f.Err
	}
	o, err := claudecode.Answer(in, out, claudecode.AnswerOptions{})
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	return o.JSON(), http.StatusOK, nil
}
