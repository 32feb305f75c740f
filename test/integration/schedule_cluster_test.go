package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
)

// The randomized fault schedule's cluster: three nats-server processes
// configured by deploy/nats (cluster.conf, cluster-n1..3.conf and
// accounts.conf), every stream and bucket R3, every process connected as
// its own deploy user; and the faults dealt to its nodes.

// The deploy users the schedule's processes connect as (deploy/nats/accounts.conf).
const (
	userAdmin    = "admin"      // provisions (--replicas 3) and registers the guard
	userLoop     = "loop"       // the workers and the submissions
	userPlugin   = "plugin-pii" // the guard interceptor: an unprivileged plugin user, its plugin named alike
	userApprover = "approver"   // the approver's first answers
	userSecond   = "alice"      // the conflicting second answers: another person
	userAuditor  = "auditor"    // the tracker, observer replay and observer verify
)

// clusterReplicas is what the deploy files say to provision and connect with.
const clusterReplicas = 3

// deployNATSDir is deploy/nats in this module.
func deployNATSDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "deploy", "nats")
}

// deployCluster is the three nodes and the users of deploy/nats.
type deployCluster struct {
	nodes     []*natsNode
	passwords map[string]string // user → password, as accounts.conf has them
}

// startDeployCluster writes each node's configuration from deploy/nats and
// starts the three nodes. Node nX gets a directory holding
// cluster-nX.conf and accounts.conf as deploy/nats has them, and
// cluster.conf with only what cannot be shared on one machine rewritten:
// the client listener (127.0.0.1 on a free port), the monitoring listener
// (likewise), the store directory, the cluster listener (127.0.0.1 on a
// free port), and the routes' host names n1, n2, n3 (127.0.0.1 and that
// node's cluster port; the route credentials stay). Server names, the
// cluster's name and authorization, JetStream limits, sync_interval,
// accounts, users and permissions are the files'.
func startDeployCluster(t *testing.T) *deployCluster {
	t.Helper()
	src := deployNATSDir()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	shared, accounts := read("cluster.conf"), read("accounts.conf")
	names := []string{"n1", "n2", "n3"}
	routes := map[string]string{}
	for _, n := range names {
		routes[n] = freeAddr(t)
	}
	c := &deployCluster{passwords: accountPasswords(t, accounts)}
	for _, name := range names {
		dir := t.TempDir()
		n := &natsNode{name: name, addr: freeAddr(t), dir: filepath.Join(dir, "store"), conf: filepath.Join(dir, "cluster-"+name+".conf")}
		conf := replaceOnce(t, "cluster.conf", shared, "listen: 0.0.0.0:4222", "listen: "+n.addr)
		conf = replaceOnce(t, "cluster.conf", conf, "http: 0.0.0.0:8222", "http: "+freeAddr(t))
		conf = replaceOnce(t, "cluster.conf", conf, `store_dir: "/data"`, fmt.Sprintf("store_dir: %q", n.dir))
		conf = replaceOnce(t, "cluster.conf", conf, "listen: 0.0.0.0:6222", "listen: "+routes[name])
		for _, r := range names {
			conf = replaceOnce(t, "cluster.conf", conf, "@"+r+":6222", "@"+routes[r])
		}
		for file, text := range map[string]string{"cluster.conf": conf, "accounts.conf": accounts, "cluster-" + name + ".conf": read("cluster-" + name + ".conf")} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			n.kill(t)
			if t.Failed() {
				t.Logf("nats-server %s output (last incarnation):\n%s", n.name, tail(n.log(), 8000))
			}
		})
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		n.start(t)
	}
	return c
}

// replaceOnce replaces old by new in text, which must hold old exactly
// once: a deploy file that changed shape fails the test, saying what it
// looked for.
func replaceOnce(t *testing.T, file, text, old, new string) string {
	t.Helper()
	if n := strings.Count(text, old); n != 1 {
		t.Fatalf("deploy/nats/%s holds %q %d times, want once: the schedule rewrites it for a cluster on one machine", file, old, n)
	}
	return strings.Replace(text, old, new, 1)
}

var userEntry = regexp.MustCompile(`\{\s*user:\s*([\w@.-]+),\s*password:\s*"([^"]*)"`)

// accountPasswords reads every user's password from accounts.conf.
func accountPasswords(t *testing.T, accounts string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range userEntry.FindAllStringSubmatch(accounts, -1) {
		out[m[1]] = m[2]
	}
	for _, u := range []string{userAdmin, userLoop, userPlugin, userApprover, userSecond, userAuditor} {
		if out[u] == "" {
			t.Fatalf("deploy/nats/accounts.conf has no user %q with a password", u)
		}
	}
	return out
}

// urls is every node's URL with user's credentials in it, comma-separated:
// how deploy/nats/cluster.conf tells clients to connect (--nats).
func (c *deployCluster) urls(user string) string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		u := url.URL{Scheme: "nats", User: url.UserPassword(user, c.passwords[user]), Host: n.addr}
		out[i] = u.String()
	}
	return strings.Join(out, ",")
}

// eventsPeers asks (as admin) which node leads the events stream and which
// follow it; an error when the stream has no leader right now. One try
// waits 3 s at most.
func eventsPeers(ctx context.Context, admin *bus.Bus) (leader string, followers []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s, err := admin.JetStream().Stream(ctx, admin.Names().Events)
	if err != nil {
		return "", nil, err
	}
	info := s.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return "", nil, errors.New("no leader")
	}
	for _, r := range info.Cluster.Replicas {
		followers = append(followers, r.Name)
	}
	return info.Cluster.Leader, followers, nil
}

// healthy reports whether every stream (and bucket) of the account has a
// leader and two current followers, and if not, which is not.
func healthy(ctx context.Context, admin *bus.Bus) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	js := admin.JetStream()
	names := js.StreamNames(ctx)
	var all []string
	for n := range names.Name() {
		all = append(all, n)
	}
	if err := names.Err(); err != nil {
		return false, "stream names: " + err.Error()
	}
	if len(all) == 0 {
		return false, "no streams listed"
	}
	for _, n := range all {
		s, err := js.Stream(ctx, n)
		if err != nil {
			return false, n + ": " + err.Error()
		}
		info := s.CachedInfo()
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return false, n + ": no leader"
		}
		current := 0
		for _, r := range info.Cluster.Replicas {
			if r.Current && !r.Offline {
				current++
			}
		}
		if current < clusterReplicas-1 || info.Config.Replicas != clusterReplicas {
			return false, fmt.Sprintf("%s: %d replicas configured, %d followers current", n, info.Config.Replicas, current)
		}
	}
	return true, ""
}

// checkR3 fails t unless every stream and bucket provisioned is R3.
func checkR3(t *testing.T, ctx context.Context, admin *bus.Bus) {
	t.Helper()
	var why string
	waitEvery(t, 2*time.Minute, time.Second, func() bool {
		var ok bool
		ok, why = healthy(ctx, admin)
		return ok
	}, "every stream R3 with a leader and two current followers (last: %s)", lazy(func() string { return why }))
	var streams []string
	names := admin.JetStream().StreamNames(ctx)
	for n := range names.Name() {
		streams = append(streams, n)
	}
	slices.Sort(streams)
	t.Logf("provisioned R3 as %s: %s", userAdmin, strings.Join(streams, ", "))
}

// nodeFaults are the node faults of the cluster schedule.
type nodeFaults struct {
	c     *deployCluster
	admin *bus.Bus
	comps map[string]*component // by node name
	rng   *rand.Rand
	// noQuorum is how long two nodes or more were down at once.
	noQuorum time.Duration
}

// leaderAndFollower names the events stream's leader and one of its
// followers (the leader's name "" when the stream has none right now: the
// faults then hit nodes drawn at random).
func (f *nodeFaults) leaderAndFollower(ctx context.Context) (leader, follower string) {
	var err error
	var followers []string
	for try := 0; try < 5; try++ {
		if leader, followers, err = eventsPeers(ctx, f.admin); err == nil && len(followers) > 0 {
			return leader, followers[f.rng.IntN(len(followers))]
		}
		time.Sleep(time.Second) // a leader being elected: ask again
	}
	names := []string{"n1", "n2", "n3"}
	f.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	return "", names[0]
}

// deal deals one node fault of kind and says what it did.
func (f *nodeFaults) deal(ctx context.Context, t *testing.T, kind string) string {
	t.Helper()
	leader, follower := f.leaderAndFollower(ctx)
	pause := 500*time.Millisecond + time.Duration(f.rng.Int64N(int64(5*time.Second)))
	role := func(n string) string {
		switch {
		case leader == "":
			return n + " (events leader unknown)"
		case n == leader:
			return n + " (events leader)"
		}
		return n + " (events follower)"
	}
	switch kind {
	case "kill-leader", "kill-follower":
		n := follower
		if kind == "kill-leader" && leader != "" {
			n = leader
		}
		d := f.comps[n].crash(t, pause)
		return fmt.Sprintf("SIGKILL %s, down %v", role(n), d.Round(100*time.Millisecond))
	case "kill-two":
		two := []string{follower}
		for _, n := range []string{"n1", "n2", "n3"} {
			if n != follower && len(two) < 2 && (leader == "" || n == leader) {
				two = append(two, n)
			}
		}
		d := f.crashAll(t, two, pause)
		return fmt.Sprintf("SIGKILL %s and %s at once, back after %v", role(two[0]), role(two[1]), d.Round(100*time.Millisecond))
	case "kill-all":
		d := f.crashAll(t, []string{"n1", "n2", "n3"}, pause)
		return fmt.Sprintf("SIGKILL n1, n2 and n3 at once, back after %v", d.Round(100*time.Millisecond))
	case "stop-node":
		n := follower
		if leader != "" && f.rng.IntN(2) == 0 {
			n = leader
		}
		// Past the Raft election timeout: the others elect a leader
		// without it, and it comes back behind.
		hold := 10*time.Second + time.Duration(f.rng.Int64N(int64(6*time.Second)))
		f.comps[n].freeze(t, hold)
		return fmt.Sprintf("SIGSTOP %s for %v", role(n), hold.Round(100*time.Millisecond))
	case "slow-node":
		n := follower
		if leader != "" && f.rng.IntN(2) == 0 {
			n = leader
		}
		// A slow node: stopped and continued in a duty cycle, for a while.
		c := f.comps[n]
		total := 10*time.Second + time.Duration(f.rng.Int64N(int64(10*time.Second)))
		stopFor := 100*time.Millisecond + time.Duration(f.rng.Int64N(int64(700*time.Millisecond)))
		runFor := 100*time.Millisecond + time.Duration(f.rng.Int64N(int64(400*time.Millisecond)))
		cycles := 0
		for begin := time.Now(); time.Since(begin) < total; cycles++ {
			c.freeze(t, stopFor)
			time.Sleep(runFor) // the duty cycle: running this long between stops
		}
		return fmt.Sprintf("slow %s for %v: %d cycles of SIGSTOP %v, SIGCONT %v", role(n), total.Round(100*time.Millisecond),
			cycles, stopFor.Round(10*time.Millisecond), runFor.Round(10*time.Millisecond))
	}
	t.Fatalf("no node fault %q", kind)
	return ""
}

// crashAll SIGKILLs the named nodes at once, waits pause, and starts them
// again; it returns how long the cluster had not all of them.
func (f *nodeFaults) crashAll(t *testing.T, names []string, pause time.Duration) time.Duration {
	t.Helper()
	begin := time.Now()
	for _, n := range names {
		if p := f.comps[n].process(); p != nil {
			_ = p.Signal(syscall.SIGKILL)
		}
	}
	for _, n := range names {
		f.comps[n].kill(t) // waits for it to be gone
	}
	time.Sleep(pause) // the fault: the nodes are away this long
	var firstBack time.Duration
	for i, n := range names {
		f.comps[n].start(t)
		if i == len(names)-2 {
			firstBack = time.Since(begin) // from here a majority of the three is up again
		}
	}
	d := time.Since(begin)
	for _, n := range names {
		f.comps[n].addDown(d)
	}
	f.noQuorum += firstBack
	return d
}
