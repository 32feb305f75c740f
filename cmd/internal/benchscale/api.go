package main

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// apiCounter counts the JetStream API requests every client makes
// ($JS.API.>), by operation, from a core subscription of the driver.
type apiCounter struct {
	sub   *nats.Subscription
	mu    sync.Mutex
	n     map[string]int
	reads map[string]int // the reads (…GET) by operation and stream, the pulls by consumer
}

func countAPI(nc *nats.Conn) (*apiCounter, error) {
	c := &apiCounter{n: map[string]int{}, reads: map[string]int{}}
	sub, err := nc.Subscribe("$JS.API.>", func(m *nats.Msg) {
		op := apiOp(m.Subject)
		c.mu.Lock()
		c.n[op]++
		switch {
		case strings.HasSuffix(op, ".GET"):
			c.reads[apiRead(m.Subject, op)]++
		case op == "CONSUMER.MSG.NEXT":
			c.reads[apiPull(m.Subject)]++
		}
		c.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}
	c.sub = sub
	return c, nc.Flush()
}

// stop ends the count and returns it: requests by operation, and reads
// by operation and stream.
func (c *apiCounter) stop() (ops, reads map[string]int) {
	_ = c.sub.Unsubscribe()
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n), maps.Clone(c.reads)
}

// apiRead names a read by its operation and stream: "$JS.API.DIRECT.GET.KV_hooks.$KV.hooks.x"
// gives "DIRECT.GET KV_hooks".
func apiRead(subject, op string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(subject, "$JS.API."), op+".")
	stream, _, _ := strings.Cut(rest, ".")
	return op + " " + stream
}

// apiPull names a pull by its consumer: "$JS.API.CONSUMER.MSG.NEXT.HOOKBUS_RUNS.w-a"
// gives "CONSUMER.MSG.NEXT HOOKBUS_RUNS/w-a".
func apiPull(subject string) string {
	rest := strings.TrimPrefix(subject, "$JS.API.CONSUMER.MSG.NEXT.")
	stream, consumer, _ := strings.Cut(rest, ".")
	return "CONSUMER.MSG.NEXT " + stream + "/" + consumer
}

// apiOp is the operation of a JetStream API subject: the upper-case words
// after $JS.API before the first name ("$JS.API.CONSUMER.CREATE.HOOKBUS_EVENTS.x.y"
// gives "CONSUMER.CREATE"; "$JS.API.DIRECT.GET.KV_hooks" gives "DIRECT.GET").
func apiOp(subject string) string {
	rest, ok := strings.CutPrefix(subject, "$JS.API.")
	if !ok {
		return subject
	}
	var words []string
	for _, t := range strings.Split(rest, ".") {
		if t == "" || strings.ContainsFunc(t, func(r rune) bool { return r < 'A' || r > 'Z' }) {
			break
		}
		words = append(words, t)
	}
	if len(words) == 0 {
		return "(other)"
	}
	return strings.Join(words, ".")
}

// sortedOps returns the operations, most requests first.
func sortedOps(n map[string]int) []string {
	ops := slices.Collect(maps.Keys(n))
	slices.SortFunc(ops, func(a, b string) int {
		if n[a] != n[b] {
			return n[b] - n[a]
		}
		return strings.Compare(a, b)
	})
	return ops
}
