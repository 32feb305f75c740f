package history

import (
	"context"
	"math"
	"regexp"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
)

// maxMemos bounds the answers a session keeps memoized (one per kinds of
// session.count, one per kinds and pattern of session.seen): past it, they
// are dropped and made again from the calls held.
const maxMemos = 64

// call is one tool call of a session's record, as the answers read it.
type call struct {
	seq     uint64    // its stream sequence
	at      time.Time // its time, never before an earlier call's
	kind    events.ActionKind
	command string
	paths   []string
	url     string
}

// session is one session's calls folded from the record, up to stream
// sequence pos, with the answers memoized over them. mu is held while it
// is caught up and asked.
type session struct {
	mu     sync.Mutex
	pos    uint64 // the last stream sequence read
	calls  []call
	byID   map[string]uint64 // event id -> stream sequence
	counts map[string]*countMemo
	seen   map[string]*seenMemo
}

// countMemo is session.count's memo for one kinds expression: the calls
// matching it among the first scanned.
type countMemo struct {
	kinds   kinds
	scanned int
	matched []int // indexes into calls
}

// seenMemo is session.seen's memo for one kinds and pattern: the stream
// sequence of the first call among the first scanned that matched.
type seenMemo struct {
	kinds   kinds
	re      *regexp.Regexp
	scanned int
	first   uint64
}

// sessions is the bounded cache of folded sessions, least recently asked
// about first out.
type sessions struct {
	mu   sync.Mutex
	held *simplelru.LRU[string, *session]
}

func newSessions(max int) *sessions {
	held, _ := simplelru.NewLRU[string, *session](max, nil)
	return &sessions{held: held}
}

// get returns the session's fold, made empty when not held.
func (c *sessions) get(agent, id string) *session {
	key := agent + "\x00" + id
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.held.Get(key); ok {
		return s
	}
	s := &session{}
	c.held.Add(key, s)
	return s
}

// caughtUp returns the session's fold caught up with the record (every
// tool.before stored up to the stream leader's last one when it is
// called), locked: the caller unlocks it. Only the events after the fold's
// position are read.
func (h *History) caughtUp(ctx context.Context, agent, id string) (*session, error) {
	if err := events.ValidateID("agent", agent); err != nil {
		return nil, invalid("%w", err)
	}
	if err := events.ValidateID("session", id); err != nil {
		return nil, invalid("%w", err)
	}
	s := h.sessions.get(agent, id)
	s.mu.Lock()
	f := bus.Filter{Agent: agent, Session: id, Stages: []events.Stage{events.StageToolBefore}, From: s.pos + 1}
	_, err := h.b.Replay(ctx, f, func(e *events.Event) error {
		s.fold(e)
		return nil
	})
	if err != nil {
		s.mu.Unlock()
		return nil, wrap(ctx, "read session "+agent+"/"+id, err)
	}
	return s, nil
}

// fold adds a stored tool.before to the session. A call without an action
// (recorded before calls carried one) or whose payload does not decode is
// not a call the answers can read: only its position is kept.
func (s *session) fold(e *events.Event) {
	s.pos = max(s.pos, e.Stored)
	tb, err := events.Data[events.ToolBefore](e)
	if err != nil || tb.Call.Action == nil {
		return
	}
	a := tb.Call.Action
	c := call{seq: e.Stored, at: e.Time, kind: a.Kind, command: a.Command, paths: a.Paths, url: a.URL}
	if n := len(s.calls); n > 0 && c.at.Before(s.calls[n-1].at) {
		c.at = s.calls[n-1].at // clocks of several writers: keep the calls' times in order
	}
	s.calls = append(s.calls, c)
	if s.byID == nil {
		s.byID = map[string]uint64{}
	}
	s.byID[e.ID] = e.Stored
}

// count answers session.count: the calls of kinds stored before stream
// sequence before, at or after since.
func (s *session) count(expr string, before uint64, since time.Time) (int64, error) {
	m, ok := s.counts[expr]
	if !ok {
		k, err := parseKinds(expr)
		if err != nil {
			return 0, err
		}
		if len(s.counts) >= maxMemos {
			clear(s.counts)
		}
		if s.counts == nil {
			s.counts = map[string]*countMemo{}
		}
		m = &countMemo{kinds: k}
		s.counts[expr] = m
	}
	for ; m.scanned < len(s.calls); m.scanned++ {
		if m.kinds.match(s.calls[m.scanned].kind) {
			m.matched = append(m.matched, m.scanned)
		}
	}
	hi := sort.Search(len(m.matched), func(i int) bool { return s.calls[m.matched[i]].seq >= before })
	lo := sort.Search(hi, func(i int) bool { return !s.calls[m.matched[i]].at.Before(since) })
	return int64(hi - lo), nil
}

// seenBefore answers session.seen: whether a call of kinds stored before
// stream sequence before has a command, a path or a URL pattern matches.
func (s *session) seenBefore(expr, pattern string, before uint64) (bool, error) {
	key := expr + "\x00" + pattern
	m, ok := s.seen[key]
	if !ok {
		k, err := parseKinds(expr)
		if err != nil {
			return false, err
		}
		re, err := regexp.Compile(pattern)
		if err != nil {
			return false, invalid("pattern %q: %v", pattern, err)
		}
		if len(s.seen) >= maxMemos {
			clear(s.seen)
		}
		if s.seen == nil {
			s.seen = map[string]*seenMemo{}
		}
		m = &seenMemo{kinds: k, re: re}
		s.seen[key] = m
	}
	for ; m.first == 0 && m.scanned < len(s.calls); m.scanned++ {
		if c := &s.calls[m.scanned]; m.kinds.match(c.kind) && m.matches(c) {
			m.first = c.seq
		}
	}
	return m.first != 0 && m.first < before, nil
}

func (m *seenMemo) matches(c *call) bool {
	if c.command != "" && m.re.MatchString(c.command) || c.url != "" && m.re.MatchString(c.url) {
		return true
	}
	return slices.ContainsFunc(c.paths, m.re.MatchString)
}

// bound is the stream sequence the answers for ev look before: ev's own
// when it is stored (Stored, or found by its id), every call held
// otherwise (the event being decided is recorded after its hooks
// answered).
func (s *session) bound(ev *events.Event) uint64 {
	if ev == nil {
		return math.MaxUint64
	}
	if ev.Stored > 0 {
		return ev.Stored
	}
	if seq, ok := s.byID[ev.ID]; ok && ev.ID != "" {
		return seq
	}
	return math.MaxUint64
}
