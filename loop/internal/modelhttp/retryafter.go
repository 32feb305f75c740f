package modelhttp

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter is the wait an answer asks for: retry-after-ms (milliseconds),
// else Retry-After as seconds or an HTTP-date (measured from now). It is 0
// when neither is present, valid and positive.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if d, ok := number(h.Get("retry-after-ms"), float64(time.Millisecond)); ok {
		return d
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if d, ok := number(v, float64(time.Second)); ok {
		return d
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// number parses a non-negative decimal count of unit.
func number(s string, unit float64) (time.Duration, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f*unit >= math.MaxInt64 {
		return 0, false
	}
	return time.Duration(f * unit), true
}
