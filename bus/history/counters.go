package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// MaxWindow is the longest window a counter may count over: the counters
// stream keeps a slot bus.CountersMaxAge after its last change.
const MaxWindow = bus.CountersMaxAge - 24*time.Hour

// Unit is the smallest value a counter counts: values are kept as whole
// millionths (JetStream counters are integers), so a cost in dollars
// counts to a millionth of a dollar and 1 counts as 1.
const Unit = 1e-6

// incrHeader is the header a JetStream counter is added to with.
const incrHeader = "Nats-Incr"

// window is a counter's window as slots of its stream.
type window struct {
	prefix string // <root>.<policy>.<counter>.<key hash>.<slot ms>
	slot   int64  // a slot's length in milliseconds
	n      int    // slots per window
}

// windowOf validates a counter's key and returns its window's layout.
func (h *History) windowOf(policy, counter, key string, w time.Duration) (window, error) {
	if err := events.ValidateID("policy", policy); err != nil {
		return window{}, invalid("%w", err)
	}
	if err := events.ValidateID("counter", counter); err != nil {
		return window{}, invalid("%w", err)
	}
	slot := w.Milliseconds() / int64(h.opts.slots)
	if w <= 0 || w > MaxWindow || slot < 1 {
		return window{}, invalid("counter %s.%s: window %v (from %v to %v)", policy, counter, w, time.Duration(h.opts.slots)*time.Millisecond, MaxWindow)
	}
	sum := sha256.Sum256([]byte(key))
	return window{
		prefix: fmt.Sprintf("%s.%s.%s.%s.%d", bus.CountersSubject(h.b.Subjects()), policy, counter, hex.EncodeToString(sum[:16]), slot),
		slot:   slot,
		n:      h.opts.slots,
	}, nil
}

// subject is the subject of the slot holding time t.
func (w window) subject(t time.Time) string {
	return w.subjectOf(t.UnixMilli() / w.slot)
}

func (w window) subjectOf(slot int64) string {
	return w.prefix + "." + strconv.FormatInt(slot, 10)
}

// counter returns the sum of the window's slots at now: the n+1 slots the
// window ending now overlaps, each read from the counters stream's leader.
func (h *History) counter(ctx context.Context, policy, name, key string, w time.Duration) (float64, error) {
	win, err := h.windowOf(policy, name, key, w)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, h.b.Timeout())
	defer cancel()
	s, err := h.countersStream(ctx)
	if err != nil {
		return 0, wrap(ctx, "counters stream", err)
	}
	nowMs := h.opts.clock().UnixMilli()
	last := nowMs / win.slot
	vals := make([]int64, win.n+1)
	g, gctx := errgroup.WithContext(ctx)
	for i := range vals {
		slot := last - int64(i)
		subject := win.subjectOf(slot)
		settled := (slot+1)*win.slot+h.settle().Milliseconds() < nowMs
		if v, ok := h.settled.get(subject); ok && settled {
			vals[i] = v
			continue
		}
		g.Go(func() error {
			v, err := readSlot(gctx, s, subject)
			if err != nil {
				return err
			}
			vals[i] = v
			if settled {
				h.settled.put(subject, v)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		h.stream.Forget() // the stream may have been made again
		return 0, err
	}
	var sum int64
	for _, v := range vals {
		sum += v
	}
	return float64(sum) * Unit, nil
}

// readSlot reads a slot's value from the stream's leader (0 when the slot
// holds nothing).
func readSlot(ctx context.Context, s jetstream.Stream, subject string) (int64, error) {
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, wrap(ctx, "read counter "+subject, err)
	}
	var v struct {
		Val string `json:"val"`
	}
	var n int64
	if err = json.Unmarshal(m.Data, &v); err == nil {
		n, err = strconv.ParseInt(v.Val, 10, 64)
	}
	if err != nil {
		return 0, fmt.Errorf("%w: counter %s holds %q, not a counter's value", ErrRecord, subject, m.Data)
	}
	return n, nil
}

// settle is how long after a slot's end an Add may still reach it: one
// made at its last moment takes up to the bus' timeout to be stored, and
// its writer's clock may be behind (up to ClockSkew). A settled slot's
// value is kept rather than read again.
func (h *History) settle() time.Duration { return h.b.Timeout() + ClockSkew }

// ClockSkew is how far behind the clock of a worker adding to a counter
// may be for every History to count its Add: a slot is read again until
// ClockSkew (and the bus' timeout) after its end, then its value is kept.
// Keep the workers' clocks synchronized (NTP).
const ClockSkew = time.Minute

// slotCache keeps settled slots' values, by subject.
type slotCache struct {
	mu   sync.Mutex
	vals map[string]int64
}

// maxSettled bounds the settled slots a History keeps (past it, it
// forgets them all and reads them again).
const maxSettled = 1 << 14

func (c *slotCache) get(subject string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vals[subject]
	return v, ok
}

func (c *slotCache) put(subject string, v int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vals == nil || len(c.vals) >= maxSettled {
		c.vals = map[string]int64{}
	}
	c.vals[subject] = v
}

// add adds v to the window's current slot.
func (h *History) add(ctx context.Context, policy, name, key string, w time.Duration, v float64) error {
	win, err := h.windowOf(policy, name, key, w)
	if err != nil {
		return err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v/Unit > math.MaxInt64/2 {
		return invalid("counter %s.%s: value %v (a finite number, not negative)", policy, name, v)
	}
	units := int64(math.Round(v / Unit))
	if units == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.b.Timeout())
	defer cancel()
	msg := nats.NewMsg(win.subject(h.opts.clock()))
	msg.Header.Set(incrHeader, strconv.FormatInt(units, 10))
	if _, err := h.b.JetStream().PublishMsg(ctx, msg); err != nil {
		return wrap(ctx, "add to counter "+msg.Subject, err)
	}
	return nil
}

func (h *History) countersStream(ctx context.Context) (jetstream.Stream, error) {
	return h.stream.Get(ctx, func(ctx context.Context) (jetstream.Stream, error) {
		return h.b.JetStream().Stream(ctx, h.b.Names().Counters)
	})
}
