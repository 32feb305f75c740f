package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hookbus/hookbus/events"
)

// Memory is a History in memory: the tool calls recorded with Record,
// and counters kept by Add. Its answers cost the same however long the
// session: each question (kinds and window, or kinds and pattern) keeps
// its answer per session and reads only the calls recorded since it was
// last asked. It is safe for concurrent use.
type Memory struct {
	mu       sync.Mutex
	now      func() time.Time
	sessions map[string]*memSession
	counters map[string]*memWindow
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory {
	return &Memory{now: time.Now, sessions: map[string]*memSession{}, counters: map[string]*memWindow{}}
}

// memCall is one recorded tool call.
type memCall struct {
	seq    int // its place in the session, from 1
	time   time.Time
	id     string // the event id
	kind   events.ActionKind
	fields []string // command, paths, URL
}

type memSession struct {
	calls  []memCall
	byID   map[string]int // event id -> seq
	counts map[string]*countMemo
	seen   map[string]*seenMemo
}

// countMemo is one count question's state: the calls of matching kinds
// (their times, in order) and how far the session has been read.
type countMemo struct {
	kinds glob
	read  int // calls read
	times []time.Time
	seqs  []int
}

// seenMemo is one seen question's state: the first matching call's seq
// (0: none yet) and how far the session has been read.
type seenMemo struct {
	kinds glob
	re    *regexp.Regexp
	read  int
	first int
}

// Record feeds a recorded event, in the session's order: a tool.before
// whose payload carries a call with an action counts as a call of the
// session. Other events are ignored.
func (m *Memory) Record(ev *events.Event) {
	if ev.Stage != events.StageToolBefore {
		return
	}
	var p events.ToolBefore
	if json.Unmarshal(ev.Data, &p) != nil || p.Call.Action == nil {
		return
	}
	a := p.Call.Action
	fields := append([]string{a.Command, a.URL}, a.Paths...)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.session(ev.SessionID)
	if _, dup := s.byID[ev.ID]; dup && ev.ID != "" {
		return
	}
	c := memCall{seq: len(s.calls) + 1, time: ev.Time, id: ev.ID, kind: a.Kind, fields: fields}
	s.calls = append(s.calls, c)
	if ev.ID != "" {
		s.byID[ev.ID] = c.seq
	}
}

func (m *Memory) session(id string) *memSession {
	s := m.sessions[id]
	if s == nil {
		s = &memSession{byID: map[string]int{}, counts: map[string]*countMemo{}, seen: map[string]*seenMemo{}}
		m.sessions[id] = s
	}
	return s
}

// before is how many of the session's calls came before the scope's
// event: those recorded before it when it was recorded, else all.
func (s *memSession) before(sc Scope) int {
	if sc.Event != nil {
		if seq, ok := s.byID[sc.Event.ID]; ok {
			return seq - 1
		}
	}
	return len(s.calls)
}

// kindsGlob compiles a kinds argument: kinds or globs separated by "|".
func kindsGlob(kinds string) (glob, error) {
	var parts []string
	for _, k := range strings.Split(kinds, "|") {
		g, err := compileGlob(k)
		if err != nil || g.re != nil {
			return glob{}, fmt.Errorf("kinds %q: %q is not a kind or a glob of kinds", kinds, k)
		}
		parts = append(parts, "^"+globRegexp(k)+"$")
	}
	return glob{re: regexp.MustCompile(strings.Join(parts, "|"))}, nil
}

// globRegexp is a path.Match glob as a regular expression (kinds hold no
// "/").
func globRegexp(g string) string {
	var b strings.Builder
	for _, r := range g {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return b.String()
}

// SessionCount implements History.
func (m *Memory) SessionCount(_ context.Context, sc Scope, kinds string, window time.Duration) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.session(sc.Session)
	memo := s.counts[kinds]
	if memo == nil {
		g, err := kindsGlob(kinds)
		if err != nil {
			return 0, err
		}
		memo = &countMemo{kinds: g}
		s.counts[kinds] = memo
	}
	upto := s.before(sc)
	for ; memo.read < len(s.calls); memo.read++ {
		c := s.calls[memo.read]
		if memo.kinds.match(string(c.kind)) {
			memo.times = append(memo.times, c.time)
			memo.seqs = append(memo.seqs, c.seq)
		}
	}
	// The matching calls before the event: those of seq <= upto. Times
	// are in order; count those within the window before the event.
	end := sort.Search(len(memo.seqs), func(i int) bool { return memo.seqs[i] > upto })
	at := m.now()
	if sc.Event != nil && !sc.Event.Time.IsZero() {
		at = sc.Event.Time
	}
	from := at.Add(-window)
	start := sort.Search(end, func(i int) bool { return !memo.times[i].Before(from) })
	return int64(end - start), nil
}

// SessionSeen implements History.
func (m *Memory) SessionSeen(_ context.Context, sc Scope, kinds, pattern string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.session(sc.Session)
	key := kinds + "\x00" + pattern
	memo := s.seen[key]
	if memo == nil {
		g, err := kindsGlob(kinds)
		if err != nil {
			return false, err
		}
		re, err := regexp.Compile(pattern)
		if err != nil {
			return false, fmt.Errorf("session.seen: pattern %q: %v", pattern, err)
		}
		memo = &seenMemo{kinds: g, re: re}
		s.seen[key] = memo
	}
	for ; memo.first == 0 && memo.read < len(s.calls); memo.read++ {
		c := s.calls[memo.read]
		if !memo.kinds.match(string(c.kind)) {
			continue
		}
		for _, f := range c.fields {
			if f != "" && memo.re.MatchString(f) {
				memo.first = c.seq
				break
			}
		}
	}
	return memo.first != 0 && memo.first <= s.before(sc), nil
}

// memWindow is one counter window's additions, in time order.
type memWindow struct {
	at  []time.Time
	val []float64
	sum float64
	cut int // additions before cut have left the window
}

func counterID(k CounterKey) string {
	return k.Policy + "\x00" + k.Counter + "\x00" + k.Key
}

// Counter implements History.
func (m *Memory) Counter(_ context.Context, k CounterKey) (float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.counters[counterID(k)]
	if w == nil {
		return 0, nil
	}
	w.expire(m.now().Add(-k.Window))
	return w.sum, nil
}

// Add implements History.
func (m *Memory) Add(_ context.Context, k CounterKey, v float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := counterID(k)
	w := m.counters[id]
	if w == nil {
		w = &memWindow{}
		m.counters[id] = w
	}
	w.at = append(w.at, m.now())
	w.val = append(w.val, v)
	w.sum += v
	w.expire(m.now().Add(-k.Window))
	return nil
}

func (w *memWindow) expire(from time.Time) {
	for w.cut < len(w.at) && w.at[w.cut].Before(from) {
		w.sum -= w.val[w.cut]
		w.cut++
	}
	if w.cut > 1024 && w.cut > len(w.at)/2 { // drop what has left
		w.at = append([]time.Time(nil), w.at[w.cut:]...)
		w.val = append([]float64(nil), w.val[w.cut:]...)
		w.cut = 0
	}
}
