package bus

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/hookbus/hookbus/events"
)

// Where a session's rebuild starts (SessionEvents). A Bus that has read a
// session remembers where its rebuild started (the read_from of its last
// compaction, or 0), and reads it again from there without asking for the
// session's last compact.after: any compaction since is stored after that
// point, so the read holds it, and the events before its read_from are cut
// off as a read from it would have left them out. When the read shows
// something else (no compaction where one was, or one that cannot be read
// or reaches back before), the session is read as if the Bus never had. A
// session that holds messages that are not events is not remembered: one
// of them may stand where its last compaction is.

// maxReadFroms bounds how many sessions a Bus remembers, the least
// recently read forgotten first.
const maxReadFroms = 8192

// readFroms is the Bus' memo of where each session's rebuild starts, by
// agent and session.
type readFroms struct {
	mu sync.Mutex
	m  *simplelru.LRU[string, uint64] // made at the first put
}

func readFromKey(agent, session string) string { return agent + "\x00" + session }

func (r *readFroms) get(agent, session string) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		return 0, false
	}
	return r.m.Get(readFromKey(agent, session))
}

func (r *readFroms) put(agent, session string, from uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m, _ = simplelru.NewLRU[string, uint64](maxReadFroms, nil)
	}
	r.m.Add(readFromKey(agent, session), from)
}

func (r *readFroms) drop(agent, session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m != nil {
		r.m.Remove(readFromKey(agent, session))
	}
}

// compactionReadFrom returns where a rebuild may start after c, a
// session's compact.after stored at stream sequence c.Stored: its
// read_from, or 0 (read everything) when it cannot be read (its data
// gone, not a CompactAfter) or does not name a point before it.
func compactionReadFrom(c *events.Event) uint64 {
	var p events.CompactAfter
	if c.DecodeData(&p) != nil || p.ReadFrom == 0 || p.ReadFrom > c.Stored {
		return 0
	}
	return p.ReadFrom
}
