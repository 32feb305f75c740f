package natsconf_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// TestClusterFormsAndReplicates starts the three nodes from
// cluster-n1.conf, cluster-n2.conf and cluster-n3.conf in this process.
// What is rewritten (confOptions, then here): client ports (free, -1), the
// cluster listener (127.0.0.1 on a port reserved by freePorts) and the route
// URLs (host nX becomes 127.0.0.1 with nX's port; the route credentials of
// the file are kept), store directories (t.TempDir()). Everything else is
// the files': server names, cluster name and authorization, JetStream
// limits, sync_interval always, accounts and users.
//
// It proves the routes form a full mesh, JetStream elects a meta leader
// that counts all three servers as peers, and an R3 HOOKBUS_EVENTS stream
// (hookbus.evt.>), provisioned as admin, takes a publish from the loop user
// with an ack and has a leader plus two current replicas.
func TestClusterFormsAndReplicates(t *testing.T) {
	files := []string{"cluster-n1.conf", "cluster-n2.conf", "cluster-n3.conf"}
	ports := freePorts(t, len(files))
	portOf := map[string]int{"n1": ports[0], "n2": ports[1], "n3": ports[2]}

	all := make([]*server.Options, len(files))
	for i, f := range files {
		opts := confOptions(t, f)
		opts.Cluster.Host = "127.0.0.1"
		opts.Cluster.Port = ports[i]
		for j, r := range opts.Routes {
			p, ok := portOf[r.Hostname()]
			if !ok {
				t.Fatalf("%s: route to unknown host %s", f, r.Redacted())
			}
			u := *r
			u.Host = fmt.Sprintf("127.0.0.1:%d", p)
			opts.Routes[j] = &u
		}
		all[i] = opts
	}
	servers := make([]*server.Server, len(all))
	for i, opts := range all {
		servers[i] = startServer(t, opts)
	}

	eventually(t, "every node routed to the two others", func() bool {
		for _, s := range servers {
			if s.NumRoutes() < 2 {
				return false
			}
		}
		return true
	})
	var leader *server.Server
	eventually(t, "a JetStream meta leader with peers n1, n2, n3", func() bool {
		for _, s := range servers {
			if s.JetStreamIsLeader() {
				peers := s.JetStreamClusterPeers()
				slices.Sort(peers)
				if slices.Equal(peers, []string{"n1", "n2", "n3"}) {
					leader = s
					return true
				}
			}
		}
		return false
	})
	t.Logf("meta leader: %s", leader.Name())

	// Provision as admin on one node, publish as loop on another.
	admin, _ := connect(t, servers[0], all[0], "admin")
	loop, _ := connect(t, servers[2], all[2], "loop")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	ajs, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := ajs.CreateStream(ctx, jetstream.StreamConfig{
		Name:     "HOOKBUS_EVENTS",
		Subjects: []string{"hookbus.evt.>"},
		Storage:  jetstream.FileStorage,
		Replicas: 3,
	})
	if err != nil {
		t.Fatalf("create R3 HOOKBUS_EVENTS as admin: %v", err)
	}

	ljs, err := jetstream.New(loop)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := ljs.Publish(ctx, "hookbus.evt.agent1.session1.intake", []byte(`{"prompt":"hi"}`))
	if err != nil {
		t.Fatalf("publish as loop: %v", err)
	}
	if ack.Stream != "HOOKBUS_EVENTS" || ack.Sequence != 1 {
		t.Fatalf("ack = %+v, want HOOKBUS_EVENTS seq 1", ack)
	}

	eventually(t, "HOOKBUS_EVENTS has 3 replicas, all current, holding the message", func() bool {
		info, err := stream.Info(ctx)
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
			return false
		}
		if info.Config.Replicas != 3 || info.State.Msgs != 1 || len(info.Cluster.Replicas) != 2 {
			return false
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Offline {
				return false
			}
		}
		return true
	})
	noErrors(t, admin)
	noErrors(t, loop)
}
