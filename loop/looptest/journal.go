package looptest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hookbus/hookbus/events"
)

// Journal is an in-memory record of sessions: a loop.Emitter, a
// loop.History and an approval.Recorder for engine tests that are about the loop, not the transport.
// It keeps what the engine relies on from JetStream: stream sequences
// (events.Event.Stored), the session fence (an append is stored only while
// the session's last run.started is the one at its claim; AppendAfter only
// while the session's last event is the one the writer read), and
// de-duplication by event id (a first append of an id already stored is an
// error). Appends are stored at once; Append's failures, like the bus',
// surface at Flush. It is safe for concurrent use.
type Journal struct {
	mu     sync.Mutex
	evs    []*events.Event
	ids    map[string]bool
	claims map[string]*events.Event // the last run.started of each session
	failed map[string]error         // the first failure of each run since its last Flush
	down   error
}

// New returns an empty journal.
func New() *Journal {
	return &Journal{ids: map[string]bool{}, claims: map[string]*events.Event{}, failed: map[string]error{}}
}

// ErrDown is the error of appends while the journal is down (Down).
var ErrDown = errors.New("looptest: journal down")

// ClaimedError is the error of an append or claim refused by the session's
// fence: By claimed the session since (for AppendAfter: By is the first
// event stored on the session since). It implements loop.Claimed.
type ClaimedError struct {
	By *events.Event
}

func (e *ClaimedError) Error() string {
	if e.By.Stage != events.StageRunStarted {
		return fmt.Sprintf("looptest: session %s/%s changed: %s of run %s stored at stream sequence %d", e.By.AgentID, e.By.SessionID, e.By.Stage, e.By.RunID, e.By.Stored)
	}
	return fmt.Sprintf("looptest: session %s/%s claimed by run %s (stream sequence %d)", e.By.AgentID, e.By.SessionID, e.By.RunID, e.By.Stored)
}

// ClaimedBy returns the run.started that claimed the session.
func (e *ClaimedError) ClaimedBy() *events.Event { return e.By }

// Down makes every later append fail with err (ErrDown when nil), as a
// connection lost for good would; Up ends it.
func (j *Journal) Down(err error) {
	if err == nil {
		err = ErrDown
	}
	j.mu.Lock()
	j.down = err
	j.mu.Unlock()
}

// Up makes appends work again.
func (j *Journal) Up() {
	j.mu.Lock()
	j.down = nil
	j.mu.Unlock()
}

// Append stores e on condition that the session's last claim is claim;
// a refusal is reported by the run's next Flush.
func (j *Journal) Append(_ context.Context, e *events.Event, claim uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.store(e, claim); err != nil {
		if j.failed[e.RunID] == nil {
			j.failed[e.RunID] = err
		}
	}
	return nil
}

// AppendSync stores e on condition that the session's last claim is claim.
func (j *Journal) AppendSync(_ context.Context, e *events.Event, claim uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.store(e, claim)
}

// Claim stores e, a run.started, on condition that the session's last claim
// is last, and returns its stream sequence.
func (j *Journal) Claim(_ context.Context, e *events.Event, last uint64) (uint64, error) {
	if e == nil || e.Stage != events.StageRunStarted {
		return 0, fmt.Errorf("looptest: claim: not a run.started event")
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.store(e, last); err != nil {
		return 0, err
	}
	return uint64(len(j.evs)), nil
}

// Reclaim stores e, a run.started, on Claim's condition and on condition
// that the session's last stored event is the one at stream sequence seen;
// when it is not, the error is a *ClaimedError naming the session's last
// claim.
func (j *Journal) Reclaim(_ context.Context, e *events.Event, last, seen uint64) (uint64, error) {
	if e == nil || e.Stage != events.StageRunStarted {
		return 0, fmt.Errorf("looptest: reclaim: not a run.started event")
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var now uint64
	for _, s := range j.evs {
		if s.AgentID == e.AgentID && s.SessionID == e.SessionID {
			now = s.Stored
		}
	}
	if c := j.claims[e.AgentID+"/"+e.SessionID]; now != seen && j.down == nil && c != nil && c.Stored == last {
		return 0, &ClaimedError{By: c.Clone()}
	}
	if err := j.store(e, last); err != nil {
		return 0, err
	}
	return uint64(len(j.evs)), nil
}

// AppendAfter stores e on condition that the last event stored on its
// session is the one at stream sequence seen (0: the session has none), with
// no condition on the session's claim, and returns e's stream sequence.
// When another event was stored since, the error is a *ClaimedError naming
// the first of them. It implements loop.Emitter's AppendAfter.
func (j *Journal) AppendAfter(ctx context.Context, e *events.Event, seen uint64) (uint64, error) {
	return j.AppendAfterAs(ctx, e, seen, "")
}

// AppendAfterAs stores e on condition that the session's last stored event
// is the one at stream sequence seen (0: none), as bus.AppendAfterAs does;
// when it is not, the error is a *ClaimedError naming the first event
// stored on the session since. writer, for an approval.resolved, is the
// NATS user whose subject it is stored on: readers get it as
// events.Event.Writer. It implements approval.Recorder.
func (j *Journal) AppendAfterAs(_ context.Context, e *events.Event, seen uint64, writer string) (uint64, error) {
	if e == nil {
		return 0, fmt.Errorf("%w: nil event", events.ErrMalformedEvent)
	}
	if writer != "" && e.Stage != events.StageApprovalResolved {
		return 0, fmt.Errorf("looptest: %s with a writer: only approval.resolved has writers' subjects", e.Stage)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.down != nil {
		return 0, j.down
	}
	if err := e.Validate(); err != nil {
		return 0, err
	}
	var last uint64
	var since *events.Event
	for _, s := range j.evs {
		if s.AgentID == e.AgentID && s.SessionID == e.SessionID {
			last = s.Stored
			if since == nil && s.Stored > seen {
				since = s
			}
		}
	}
	if last != seen {
		if since == nil {
			return 0, fmt.Errorf("looptest: fence of %s/%s at %d, but its last event is at %d", e.AgentID, e.SessionID, seen, last)
		}
		return 0, &ClaimedError{By: since.Clone()}
	}
	if j.ids[e.ID] {
		return 0, fmt.Errorf("looptest: event id %s already stored", e.ID)
	}
	c := e.Clone()
	c.Stored, c.Writer = uint64(len(j.evs)+1), writer
	j.evs = append(j.evs, c)
	j.ids[e.ID] = true
	return c.Stored, nil
}

// Flush returns the run's first failure since its last Flush.
func (j *Journal) Flush(_ context.Context, runID string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	err := j.failed[runID]
	delete(j.failed, runID)
	return err
}

func (j *Journal) store(e *events.Event, claim uint64) error {
	if j.down != nil {
		return j.down
	}
	if e == nil {
		return fmt.Errorf("%w: nil event", events.ErrMalformedEvent)
	}
	key := e.AgentID + "/" + e.SessionID
	var last uint64
	if c := j.claims[key]; c != nil {
		last = c.Stored
	}
	if last != claim {
		if c := j.claims[key]; c != nil {
			return &ClaimedError{By: c.Clone()}
		}
		return fmt.Errorf("looptest: fence of %s at %d, but the session has no claim", key, claim)
	}
	return j.put(e)
}

// put stores e, a valid event, unless its id is stored already.
func (j *Journal) put(e *events.Event) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if j.ids[e.ID] {
		return fmt.Errorf("looptest: event id %s already stored", e.ID)
	}
	key := e.AgentID + "/" + e.SessionID
	c := e.Clone()
	c.Stored = uint64(len(j.evs) + 1)
	j.evs = append(j.evs, c)
	j.ids[e.ID] = true
	if c.Stage == events.StageRunStarted {
		j.claims[key] = c
	}
	return nil
}

// SessionEvents returns the session's events in the order they were stored.
func (j *Journal) SessionEvents(_ context.Context, agent, session string) ([]*events.Event, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.down != nil {
		return nil, j.down
	}
	var out []*events.Event
	for _, e := range j.evs {
		if e.AgentID == agent && e.SessionID == session {
			out = append(out, e.Clone())
		}
	}
	return out, nil
}

// RunEvents returns the events of one run of the session in the order
// they were stored.
func (j *Journal) RunEvents(_ context.Context, agent, session, run string) ([]*events.Event, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.down != nil {
		return nil, j.down
	}
	var out []*events.Event
	for _, e := range j.evs {
		if e.AgentID == agent && e.SessionID == session && e.RunID == run {
			out = append(out, e.Clone())
		}
	}
	return out, nil
}

// Events returns every stored event, in the order they were stored.
func (j *Journal) Events() []*events.Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]*events.Event, len(j.evs))
	for i, e := range j.evs {
		out[i] = e.Clone()
	}
	return out
}

// Load stores evs as they are (ids, seqs, order), without fences: a
// recorded history to rebuild from.
func (j *Journal) Load(evs ...*events.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range evs {
		c := e.Clone()
		c.Stored = uint64(len(j.evs) + 1)
		j.evs = append(j.evs, c)
		j.ids[c.ID] = true
		if c.Stage == events.StageRunStarted {
			j.claims[c.AgentID+"/"+c.SessionID] = c
		}
	}
}
