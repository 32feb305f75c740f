package bustest

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a JetStream cluster of in-process nats-servers on loopback.
type Cluster struct {
	// Servers are the nodes, named bustest-1 ... bustest-n.
	Servers []*server.Server
}

// StartCluster starts an n-node JetStream cluster in this process: client
// listeners on free loopback ports, routes between every pair of nodes,
// each store in its own t.TempDir(). It returns once every node routes to
// every other and JetStream has a meta leader that every node follows and
// that sees every node online.
// t.Cleanup shuts the nodes down (a node the test shut down already is
// fine) and waits for them.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("bustest: cluster of %d nodes", n)
	}
	ports := freePorts(t, n)
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", p)
	}
	c := &Cluster{}
	for i := range n {
		others := slices.Delete(slices.Clone(routes), i, i+1)
		opts := &server.Options{
			ServerName: fmt.Sprintf("bustest-%d", i+1),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoLog:      true,
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "bustest", Host: "127.0.0.1", Port: ports[i]},
			Routes:     server.RoutesFromStr(strings.Join(others, ",")),
		}
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatalf("bustest: cluster node %s: %v", opts.ServerName, err)
		}
		t.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
		s.Start()
		c.Servers = append(c.Servers, s)
	}
	for _, s := range c.Servers {
		if !s.ReadyForConnections(30 * time.Second) {
			t.Fatalf("bustest: cluster node %s not ready", s.Name())
		}
	}
	// Ready when the meta leader counts every node as an online JetStream
	// peer: before that, placing an R(n) stream fails ("no suitable peers").
	Eventuallyf(t, 60*time.Second, func() bool {
		peers := 0
		for _, s := range c.Servers {
			if s.NumRoutes() < n-1 || !s.JetStreamIsCurrent() {
				return false
			}
			if s.JetStreamIsLeader() {
				peers = len(s.JetStreamClusterPeers())
			}
		}
		return peers == n
	}, "a %d-node cluster whose JetStream meta leader sees every node", n)
	return c
}

// URLs returns the client URLs of the nodes that are running,
// comma-separated, as bus.Connect takes them: the nodes named in first, in
// that order, then the others.
func (c *Cluster) URLs(first ...string) string {
	var urls []string
	for _, name := range first {
		if s := c.Server(name); s != nil && s.Running() {
			urls = append(urls, s.ClientURL())
		}
	}
	for _, s := range c.Servers {
		if s.Running() && !slices.Contains(first, s.Name()) {
			urls = append(urls, s.ClientURL())
		}
	}
	return strings.Join(urls, ",")
}

// Server returns the node named name, or nil.
func (c *Cluster) Server(name string) *server.Server {
	for _, s := range c.Servers {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// freePorts reserves n free loopback ports (released before use, so a
// port may in rare cases be taken in between).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("bustest: free port: %v", err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}
