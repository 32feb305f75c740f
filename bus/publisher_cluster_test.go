package bus_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// eventsLeader polls the events stream's info (2s per attempt) until it
// has a leader other than not, with at least followers current followers.
func eventsLeader(t *testing.T, b *bus.Bus, not string, followers int) string {
	t.Helper()
	var leader string
	bustest.Eventuallyf(t, 60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := b.JetStream().Stream(ctx, b.Names().Events)
		if err != nil {
			return false
		}
		info, err := s.Info(ctx)
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || info.Cluster.Leader == not {
			return false
		}
		current := 0
		for _, r := range info.Cluster.Replicas {
			if r.Current && !r.Offline {
				current++
			}
		}
		leader = info.Cluster.Leader
		return current >= followers
	}, "a leader of the events stream")
	return leader
}

// A write-ahead publish in flight when the stream's leader (and the
// client's server) goes away is sent again after the ack timeout, with the
// same id, instead of waiting for its ack until ctx ends: every PublishSync
// returns nil, and each event is stored once.
func TestPublishSyncSurvivesLeaderLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := bustest.StartCluster(t, 3)
	admin, err := bus.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	bustest.Provision(t, admin, bus.WithReplicas(3))
	ab, _ := bus.New(admin)
	leader := eventsLeader(t, ab, "", 2)

	nc, err := bus.Connect(c.URLs(leader), nats.DontRandomize(), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, err := bus.New(nc, bus.WithPublishRetry(time.Second, time.Minute))
	if err != nil {
		t.Fatal(err)
	}

	const publishers = 4
	killed := make(chan struct{})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		stored  []string
		failed  []error
		running atomic.Int32
	)
	for range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			after := 0 // publishes begun after the kill
			for n := 0; after < 3; n++ {
				select {
				case <-killed:
					after++
				default:
				}
				e := testEvent(t, "a", "s", events.NewID(), events.StageToolBefore, 1)
				err := b.PublishSync(ctx, e)
				mu.Lock()
				if err != nil {
					failed = append(failed, err)
				} else {
					stored = append(stored, e.ID)
				}
				mu.Unlock()
				if n == 5 {
					running.Add(1)
				}
				if err != nil && ctx.Err() != nil {
					return
				}
			}
		}()
	}
	bustest.Eventuallyf(t, 30*time.Second, func() bool { return running.Load() == publishers }, "publishers under way")
	c.Server(leader).Shutdown()
	close(killed)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d PublishSync calls failed across the leader loss, first: %v", len(failed), failed[0])
	}

	survivor, err := bus.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer survivor.Close()
	sb, _ := bus.New(survivor)
	eventsLeader(t, sb, leader, 1)
	count := map[string]int{}
	if _, err := sb.Replay(ctx, bus.Filter{}, func(e *events.Event) error {
		count[e.ID]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range stored {
		if count[id] != 1 {
			t.Errorf("acknowledged event %s stored %d times", id, count[id])
		}
	}
	t.Logf("%d events published with write-ahead across the loss of leader %s", len(stored), leader)
}
