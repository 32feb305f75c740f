package runs

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
)

// Defaults of ConsumerConfig.
const (
	DefaultDurable  = "hookbus-workers"
	DefaultAckWait  = 10 * time.Minute
	DefaultPollWait = time.Second
)

// minPollWait is the shortest pull: a worker with more agents than slots
// pulls each agent's new runs this long at a time, going round them.
const minPollWait = 100 * time.Millisecond

// ServedAgent is an agent a worker serves, and the definition it runs it on.
type ServedAgent struct {
	// ID is the agent id.
	ID string
	// Definition is the definition the worker runs the agent on. With a
	// Digest, the worker registers it when the agent has none, takes the
	// agent's new runs only while it is the registered one, and takes the
	// runs pinned to it in any case. Without one (a library worker), the
	// worker takes the agent's new runs only while no definition of the
	// agent is registered.
	Definition events.Definition
	// Source says where the definition was read ("ops.yaml", "flags"),
	// for people reading the registry.
	Source string
	// Replace makes the worker's definition the registered one even when
	// another is (a deploy); a newer Version replaces it too.
	Replace bool
	// Adopt makes the worker, while its definition is the registered one,
	// also take the runs pinned to the agent's other definitions (the
	// definition's on_definition_change: adopt).
	Adopt bool
}

// Agents lists agents served without a definition of their own.
func Agents(ids ...string) []ServedAgent {
	out := make([]ServedAgent, len(ids))
	for i, id := range ids {
		out[i] = ServedAgent{ID: id}
	}
	return out
}

// ConsumerConfig configures a loop worker's consumption of run requests.
// Every worker of one pool uses the same Durable.
type ConsumerConfig struct {
	// Durable names the pool (default "hookbus-workers"): its consumers
	// are <Durable>-run-<agent> and <Durable>-run-<agent>-<digest>, and its
	// dead letters go to <prefix>.dlq.<Durable>.
	Durable string
	// Agents are the agents the worker serves (at least one): it takes
	// requests of these agents only. Requests of an agent no worker
	// serves wait on the queue.
	Agents []ServedAgent
	// Worker names the worker in the fleet's buckets (default host:pid).
	Worker string
	// Concurrency is how many runs this worker handles at once, whatever
	// their agent (default 1).
	Concurrency int
	// AckWait is how long a run may go without a sign of life before it is
	// given to another worker (default 10m). While the handler runs, the
	// worker reports progress every AckWait/3, so a long run keeps its lease.
	AckWait time.Duration
	// MaxDeliver bounds the attempts of one request (default 5; -1 forever);
	// after the last failed attempt the request is dropped, loudly, and its
	// run closed (Close). An attempt that failed only because JetStream was
	// unavailable is no attempt: it is made again (Outage).
	MaxDeliver int
	// Outage is how long an attempt that failed only because JetStream was
	// unavailable (bus.Unavailable: an election, a node away) is made again
	// in the same delivery, after a back-off, the request's lease kept:
	// such failures use up none of MaxDeliver's attempts while they last
	// less than Outage (default: the bus' outage bound, bus.Bus.Outage;
	// -1: never made again in place).
	Outage time.Duration
	// Close records the end of a run whose request is dropped after its
	// last attempt, naming why, so that nobody waits for a run that will
	// not be attempted again (loop.Worker.Close). nil: the request is
	// dropped with no end recorded (logged).
	Close Closer
	// MaxAckPending bounds the requests in flight of each consumer across
	// the pool (default: the server's, 1000).
	MaxAckPending int
	// PollWait is how long one pull for work waits; Stop and Drain take up
	// to this long (default 1s).
	PollWait time.Duration
	// Heartbeat is how often the worker writes its presence in the
	// workers bucket (default DefaultHeartbeat; below bus.PresenceTTL).
	Heartbeat time.Duration
}

// Closer records the end of req's run (run.failed naming cause) when its
// request is dropped after its last attempt. A nil error means the end is
// recorded, or the run had one already.
type Closer func(ctx context.Context, req *events.RunRequest, cause error) error

// ConsumerStats counts what a run consumer did since it started.
type ConsumerStats struct {
	Received    uint64 // requests received, redeliveries included
	Completed   uint64 // handled and acknowledged
	Failed      uint64 // handler errors, handed back to the queue
	Abandoned   uint64 // left to the worker that holds the run now
	Dropped     uint64 // terminated after the last attempt
	Closed      uint64 // dropped, and their run's end recorded by Close
	Unavailable uint64 // attempts made again because JetStream was unavailable
	Malformed   uint64 // bodies that are not valid run requests (terminated)
	// Refused counts requests whose body names another agent or
	// definition than the subject they were published on: dead-lettered
	// and terminated, never run (subject permissions on
	// <prefix>.run.<agent> must mean something).
	Refused uint64
	// HandedOff counts requests queued again for other workers, never run
	// here: runs recorded on another definition (pinned to it), and new
	// runs taken just as another definition of their agent was registered.
	HandedOff uint64
	// HandedBack counts runs in flight handed back to the queue unended
	// when the worker stopped (HandBack), for another worker to resume.
	HandedBack uint64
}

// defaults fills in and checks a config.
// outage is the bus' outage bound, the default of Outage.
func (cfg *ConsumerConfig) defaults(outage time.Duration) error {
	cfg.Durable = cmp.Or(cfg.Durable, DefaultDurable)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, 1)
	cfg.AckWait = cmp.Or(cfg.AckWait, DefaultAckWait)
	cfg.MaxDeliver = cmp.Or(cfg.MaxDeliver, bus.DefaultMaxDeliver)
	cfg.PollWait = cmp.Or(cfg.PollWait, DefaultPollWait)
	cfg.Outage = cmp.Or(cfg.Outage, outage)
	cfg.Heartbeat = cmp.Or(cfg.Heartbeat, DefaultHeartbeat)
	if cfg.Worker == "" {
		host, _ := os.Hostname()
		host = cmp.Or(host, "worker")
		cfg.Worker = host + ":" + strconv.Itoa(os.Getpid())
	}
	if err := validDurable("durable", cfg.Durable); err != nil {
		return err
	}
	switch {
	case cfg.Concurrency < 0:
		return invalid("concurrency %d is negative", cfg.Concurrency)
	case cfg.AckWait < time.Second:
		return invalid("run ack wait %v (want >= 1s)", cfg.AckWait)
	case cfg.Outage < -1:
		return invalid("outage %v (want -1, or >= 0)", cfg.Outage)
	case cfg.MaxDeliver < -1:
		return invalid("max deliver %d (want -1 or > 0)", cfg.MaxDeliver)
	case cfg.MaxAckPending < 0:
		return invalid("max ack pending %d is negative", cfg.MaxAckPending)
	case cfg.PollWait < minPollWait:
		return invalid("poll wait %v (want >= %v)", cfg.PollWait, minPollWait)
	case cfg.Heartbeat < 100*time.Millisecond || cfg.Heartbeat >= bus.PresenceTTL:
		return invalid("heartbeat %v (want from 100ms to under %v)", cfg.Heartbeat, bus.PresenceTTL)
	case len(cfg.Agents) == 0:
		return invalid("no agents: name the agents the worker serves")
	}
	seen := map[string]bool{}
	for _, a := range cfg.Agents {
		if err := events.ValidateID("agent", a.ID); err != nil {
			return err
		}
		if seen[a.ID] {
			return invalid("agent %q listed twice", a.ID)
		}
		seen[a.ID] = true
		if a.Definition.Digest != "" {
			if err := events.ValidateDigest(a.Definition.Digest); err != nil {
				return fmt.Errorf("agent %s: %w", a.ID, err)
			}
		}
		if (a.Replace || a.Adopt) && a.Definition.Digest == "" {
			return invalid("agent %q: replace and adopt need a definition", a.ID)
		}
	}
	return nil
}
