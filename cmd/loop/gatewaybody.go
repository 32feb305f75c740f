package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hookbus/hookbus/hooks/harness"
)

// Bounds of the hook inputs loop gateway reads. Claude Code's hook inputs
// are small; a tool's output is the largest part.
const (
	DefaultMaxBody          = 8 << 20                 // --max-body
	DefaultMaxBodyTotal     = 32 << 20                // --max-body-total
	DefaultMaxBodyPerCaller = DefaultMaxBodyTotal / 2 // --max-body-per-caller: half the total unless given
	DefaultReadTimeout      = 10 * time.Second
	DefaultMinBodyRate      = 128 << 10 // --min-body-rate, bytes a second
)

// bodyChunk is the most a request reserves ahead of the bytes it has
// read: a stalled body holds at most this much of the budgets.
const bodyChunk = 4 << 10

// bodyLimits bound what loop gateway reads of hook inputs.
type bodyLimits struct {
	max       int64         // one body (413 above it)
	total     int64         // bytes held at once across all requests
	perCaller int64         // bytes held at once by one caller
	timeout   time.Duration // headers, and a body's first bytes
	minRate   int64         // bytes a second a body must keep up after timeout
}

// defaultBodyLimits are the flags' defaults.
func defaultBodyLimits() bodyLimits {
	return bodyLimits{max: DefaultMaxBody, total: DefaultMaxBodyTotal, perCaller: DefaultMaxBodyPerCaller,
		timeout: DefaultReadTimeout, minRate: DefaultMinBodyRate}
}

// check refuses limits that contradict each other, naming the flags.
func (l bodyLimits) check() error {
	mb, mt, mp := byteSize(l.max), byteSize(l.total), byteSize(l.perCaller)
	switch {
	case l.max > l.perCaller:
		return fmt.Errorf("--max-body %s is over --max-body-per-caller %s", &mb, &mp)
	case l.perCaller > l.total:
		return fmt.Errorf("--max-body-per-caller %s is over --max-body-total %s", &mp, &mt)
	case l.timeout <= 0:
		return fmt.Errorf("--read-timeout %s: give a positive duration", l.timeout)
	case l.minRate <= 0:
		return errors.New("--min-body-rate: give a positive size")
	}
	return nil
}

// slowest is how long the largest body may take at the minimum rate: the
// server's bound on a whole request, for those refused before the
// gateway reads them.
func (l bodyLimits) slowest() time.Duration {
	return l.timeout + l.deadline(l.max)
}

// deadline is how long after its first byte was due a body may take to
// reach n bytes: n at the minimum rate.
func (l bodyLimits) deadline(n int64) time.Duration {
	return time.Duration(float64(n) / float64(l.minRate) * float64(time.Second))
}

// byteBudget counts the bytes of hook inputs held: in total, and by each
// caller. It is safe for concurrent use.
type byteBudget struct {
	mu        sync.Mutex
	total     int64
	perCaller int64
	held      int64
	by        map[string]int64
}

func newByteBudget(total, perCaller int64) *byteBudget {
	return &byteBudget{total: total, perCaller: perCaller, by: map[string]int64{}}
}

// take reserves n bytes for caller; false (nothing reserved) when that
// would pass the total or the caller's share.
func (b *byteBudget) take(caller string, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.total || b.by[caller]+n > b.perCaller {
		return false
	}
	b.held += n
	b.by[caller] += n
	return true
}

// give returns n bytes of caller's.
func (b *byteBudget) give(caller string, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
	if b.by[caller] -= n; b.by[caller] <= 0 {
		delete(b.by, caller)
	}
}

// Held is how many bytes all requests hold, and caller of them.
func (b *byteBudget) Held(caller string) (all, of int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.by[caller]
}

// errSlowBody is a body that did not keep up with --min-body-rate.
var errSlowBody = errors.New("the hook input came slower than the gateway takes (--read-timeout, then --min-body-rate)")

// read reads r's body whole for caller, reserving its bytes in the budgets
// as they arrive (never the declared length up front); release gives them
// back. A body of unknown length (411) or over --max-body (413) is not
// read; one whose bytes would pass --max-body-total or the caller's
// --max-body-per-caller is 503, and one that comes slower than
// --min-body-rate after --read-timeout is 408, what it held given back.
func (g *gateway) read(w http.ResponseWriter, r *http.Request, caller string) (raw []byte, release func(), status int, err error) {
	n := r.ContentLength
	switch {
	case n < 0:
		return nil, nil, http.StatusLengthRequired, errors.New("send Content-Length: a hook input of unknown length is not read")
	case n > g.limits.max:
		return nil, nil, http.StatusRequestEntityTooLarge, fmt.Errorf("a hook input of %d bytes is over --max-body (%d)", n, g.limits.max)
	}
	rc := http.NewResponseController(w)
	start := time.Now().Add(g.limits.timeout)
	var held int64
	release = func() { g.budget.give(caller, held) }
	raw = make([]byte, 0, min(n, bodyChunk))
	for int64(len(raw)) < n {
		want := min(bodyChunk, n-int64(len(raw)))
		if !g.budget.take(caller, want) {
			release()
			all, of := g.budget.Held(caller)
			return nil, nil, http.StatusServiceUnavailable, fmt.Errorf("the gateway holds %d bytes of hook inputs, %d of them %s's (at most --max-body-total %d, --max-body-per-caller %d at once): try again", all, of, caller, g.limits.total, g.limits.perCaller)
		}
		held += want
		// A deadline the server cannot set is no reason to refuse a body:
		// the server's whole-request bound still holds.
		_ = rc.SetReadDeadline(start.Add(g.limits.deadline(int64(len(raw)) + want)))
		raw = slices.Grow(raw, int(want))
		k, err := r.Body.Read(raw[len(raw) : len(raw)+int(want)])
		raw = raw[:len(raw)+k]
		held -= want - int64(k)
		g.budget.give(caller, want-int64(k))
		switch {
		case err == nil || (errors.Is(err, io.EOF) && int64(len(raw)) == n):
		case errors.Is(err, os.ErrDeadlineExceeded):
			release()
			return nil, nil, http.StatusRequestTimeout, fmt.Errorf("%w: %d of %d bytes in %s", errSlowBody, len(raw), n, time.Since(start.Add(-g.limits.timeout)).Round(time.Millisecond))
		default:
			release()
			return nil, nil, http.StatusBadRequest, fmt.Errorf("%w: the body ended before its %d bytes: %v", harness.ErrBadInput, n, err)
		}
	}
	_ = rc.SetReadDeadline(time.Time{})
	return raw, release, 0, nil
}
