package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/agents"
	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// The randomized fault schedule: minutes of load on a small fleet while
// faults drawn at random hit every component, then the whole record is
// audited (doc.go says what it proves).

// Environment of the schedule.
const (
	envFaultSeed      = "HOOKBUS_FAULT_SEED"      // replay a schedule: the seed it logged
	envFaultLoad      = "HOOKBUS_FAULT_LOAD"      // how long the load and the faults last (default 8m)
	envFaultSchedules = "HOOKBUS_FAULT_SCHEDULES" // how many schedules to run, one after another (default 1)
	envFaultTopology  = "HOOKBUS_FAULT_TOPOLOGY"  // cluster (the default: deploy/nats, R3) or single (one nats-server)
)

// The schedule's shape.
const (
	schedLoad    = 8 * time.Minute // load and faults
	schedMinRuns = 500             // runs submitted at least (over schedLoad; proportionally less when shorter)
	// On the cluster every publish waits for two nodes' fsync
	// (sync_interval always) and the faults leave it without quorum for
	// tens of seconds: fewer runs.
	schedMinRunsCluster = 400
	schedLanes          = 6    // sessions in flight per agent
	schedLease          = "4s" // the workers' --lease: SIGSTOPs of up to 9 s outlast it
	schedDelayMS        = 300  // the scripted model's time per reply
	schedDrain          = 10 * time.Minute
	schedQuorum         = 3 * time.Minute // how long the cluster may take to have every stream whole again once the faults stop
	schedMaxStop        = 9 * time.Second
	deployed            = "w2v2" // worker w2 after the deploy, as its executions name it
)

// The faults the schedule deals, each in turn from a shuffled deck, so
// that every kind happens about as often: the worker and interceptor
// faults, and the server's (one server) or the nodes' (the cluster).
var (
	processFaults = []string{"kill-worker", "kill-interceptor", "stop-worker", "stop-interceptor"}
	singleFaults  = []string{"kill-nats", "stop-nats"}
	clusterFaults = []string{"kill-leader", "kill-follower", "kill-two", "kill-all", "stop-node", "slow-node"}
)

// A fleet under a randomized fault schedule, on a 3-node JetStream cluster
// as deploy/nats configures it (startDeployCluster: every stream and
// bucket R3, each process connected as its own deploy user:
// HOOKBUS_FAULT_TOPOLOGY=single runs it on one nats-server without users
// instead). Three loop serve workers (user loop) serve two agents (one
// both, one each) with a 4 s lease; a fail-closed tool.before interceptor
// (another process, a plugin user) records every request it sees and tags
// each Bash command it allows with its run and call. Sessions get runs back
// to back, and pairs of runs at once; agent B's calls wait for approval,
// answered from the CLI by one person (approver) and contradicted by a
// second (alice) while workers die. Every few seconds a fault drawn at
// random (seeded: HOOKBUS_FAULT_SEED replays one): SIGKILL and restart of a
// worker or the interceptor, or SIGSTOP of one for 1-9 s; on the cluster,
// SIGKILL of the events stream's leader, of a follower, of two nodes at
// once and of all three, SIGSTOP of a node for 10-16 s (past the Raft
// election timeout), a slow node (SIGSTOP and SIGCONT in a duty cycle for
// 10-20 s); on one server, SIGKILL or SIGSTOP of it. Halfway through, a
// deploy of agent A's version 2 on one worker. Then the faults stop, the
// cluster gets every stream whole again, everything drains, and the stream
// is read back (as auditor) with observer replay --json and observer
// verify --json and audited run by run (auditSchedule).
// HOOKBUS_FAULT_SCHEDULES=N runs N schedules one after another, each with a
// seed of its own.
func TestFaultRandomizedSchedule(t *testing.T) {
	hardFaults(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envFaultSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envFaultSeed, s, err)
		}
		seed = v
	}
	loadFor := schedLoad
	if s := os.Getenv(envFaultLoad); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 10*time.Second {
			t.Fatalf("%s=%q: want a duration of 10s or more", envFaultLoad, s)
		}
		loadFor = d
	}
	n := 1
	if s := os.Getenv(envFaultSchedules); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q: want a count of 1 or more", envFaultSchedules, s)
		}
		n = v
	}
	cluster := true
	switch s := os.Getenv(envFaultTopology); s {
	case "", "cluster":
	case "single":
		cluster = false
	default:
		t.Fatalf("%s=%q: want cluster (the default) or single", envFaultTopology, s)
	}
	seeds := rand.New(rand.NewPCG(seed, 1))
	for i := range n {
		if i > 0 {
			seed = seeds.Uint64()
		}
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) { faultSchedule(t, seed, loadFor, cluster) })
	}
}

// schedFleet is where the schedule's processes connect, as whom, and the
// servers' faults.
type schedFleet struct {
	cluster  bool
	urls     func(user string) string // the --nats of a process connecting as user
	replicas []string                 // the flags every command is given: --replicas 3 on the cluster
	plugin   string                   // the guard's plugin name
	kinds    []string                 // the faults dealt
	servers  []*component             // the nats-server processes
	nodes    *nodeFaults              // the cluster's node faults
	admin    *bus.Bus
}

// newSchedFleet starts the servers: the deploy cluster, provisioned R3 as
// admin, or one nats-server without users.
func newSchedFleet(t *testing.T, ctx context.Context, cluster bool, rng *rand.Rand) *schedFleet {
	t.Helper()
	f := &schedFleet{cluster: cluster}
	if !cluster {
		srv := startNATS(t)
		f.urls = func(string) string { return srv.url() }
		f.plugin = "guard"
		f.kinds = append(slices.Clone(processFaults), singleFaults...)
		f.servers = []*component{natsComponent("nats-server", srv)}
		f.admin = adminBus(t, ctx, srv.url(), 1)
		return f
	}
	c := startDeployCluster(t)
	f.urls = c.urls
	f.replicas = []string{"--replicas", strconv.Itoa(clusterReplicas)}
	f.plugin = userPlugin
	f.kinds = append(slices.Clone(processFaults), clusterFaults...)
	f.nodes = &nodeFaults{c: c, rng: rng, comps: map[string]*component{}}
	for _, n := range c.nodes {
		comp := natsComponent(n.name, n)
		f.servers = append(f.servers, comp)
		f.nodes.comps[n.name] = comp
	}
	f.admin = adminBus(t, ctx, c.urls(userAdmin), clusterReplicas)
	f.nodes.admin = f.admin
	checkR3(t, ctx, f.admin)
	return f
}

// identity is who the record says an answer given as user came from: the
// user on the cluster, anonymous on a server without users.
func (f *schedFleet) identity(user string) string {
	if f.cluster {
		return user
	}
	return events.IdentityAnonymous
}

// userBus is a bus connected as user (reconnecting forever), with the
// fleet's replicas; nothing provisioned.
func (f *schedFleet) userBus(t *testing.T, user string) *bus.Bus {
	t.Helper()
	replicas := 1
	if f.cluster {
		replicas = clusterReplicas
	}
	return newBus(t, connect(t, f.urls(user), nats.Name("hookbus-faults-"+user)), bus.WithReplicas(replicas))
}

// faultSchedule runs one schedule: its faults drawn from seed, its load
// lasting loadFor, on the deploy cluster or one server.
func faultSchedule(t *testing.T, seed uint64, loadFor time.Duration, cluster bool) {
	begin := time.Now()
	least := schedMinRuns
	if cluster {
		least = schedMinRunsCluster
	}
	minRuns := max(20, int(int64(least)*int64(loadFor)/int64(schedLoad)))
	topology := "one nats-server"
	if cluster {
		topology = "a 3-node cluster from deploy/nats, R3"
	}
	t.Logf("fault schedule seed %d (replay: %s=%d); load %v, at least %d runs, on %s", seed, envFaultSeed, seed, loadFor, minRuns, topology)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := testCtx(t, loadFor+60*time.Minute)

	// The fleet.
	fl := newSchedFleet(t, ctx, cluster, rand.New(rand.NewPCG(seed, 2)))
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{agentA: schedScript(t, dir, agentA, schedDelayMS), agentB: schedScript(t, dir, agentB, schedDelayMS)}
	files := map[string]string{
		"w1": schedAgentFile(t, dir, "both", root, scripts, agentA, agentB),
		"w2": schedAgentFile(t, dir, "a", root, scripts, agentA),
		"w3": schedAgentFile(t, dir, "b", root, scripts, agentB),
		// The deploy: w2 comes back halfway through as w2v2, on version 2
		// of agent A.
		deployed: schedAgentFile(t, dir, "a2", root, scripts, agentA+"@2"),
	}
	serves := map[string][]string{"w1": {agentA, agentB}, "w2": {agentA}, "w3": {agentB}, deployed: {agentA}}
	defs := schedDefinitions(t, files, serves)
	if defs[deployed][agentA] == defs["w2"][agentA] {
		t.Fatalf("version 2 of %s has the digest of version 1 (%s)", agentA, defs["w2"][agentA])
	}

	guardLog := filepath.Join(dir, "guard.log")
	if r := run(t, "observer", append([]string{"hooks", "add", "--nats", fl.urls(userAdmin), "--stage", "tool.before", "--plugin", fl.plugin,
		"--policy", "fail", "--timeout", "3s", "--agents", "sched-*"}, fl.replicas...)...); r.code != 0 {
		t.Fatalf("observer hooks add: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	guard := &procSlot{name: "interceptor", path: os.Args[0], args: []string{"-test.run=^$"}, ready: "serving",
		env: []string{envInterceptor + "=guard", envNATS + "=" + fl.urls(userPlugin), envPlugin + "=" + fl.plugin, envGuardLog + "=" + guardLog}}
	guard.start(t)
	workers := map[string]*procSlot{}
	var comps []*component
	serveArgs := func(file string, extra ...string) []string {
		args := append([]string{"serve", "--nats", fl.urls(userLoop), "--agents", file}, extra...)
		args = append(args, "--concurrency", "4", "--lease", schedLease, "-v")
		return append(args, fl.replicas...)
	}
	for _, name := range []string{"w1", "w2", "w3"} {
		w := &procSlot{name: name, path: filepath.Join(bin, "loop"), ready: "taking runs", env: []string{envFaultWorker + "=" + name},
			args: serveArgs(files[name])}
		w.start(t)
		workers[name] = w
		comps = append(comps, w.component("worker"))
	}
	guardC := guard.component("interceptor")
	slots := []*procSlot{workers["w1"], workers["w2"], workers["w3"], guard}
	comps = append(comps, guardC)
	comps = append(comps, fl.servers...)
	defer func() {
		if t.Failed() {
			for _, name := range []string{"w1", "w2", "w3"} {
				t.Logf("%s", tail(workers[name].logs(), 20000))
			}
			t.Logf("interceptor:\n%s", tail(guard.logs(), 4000))
		}
	}()

	// The load.
	tr := newTracker(fl.userBus(t, userAuditor))
	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	wg.Go(func() { tr.follow(lctx, 300*time.Millisecond) })
	l := newLoad(fl, fl.userBus(t, userLoop), tr, seed)
	for i := range 2 * schedLanes {
		agent := agentA
		if i%2 == 1 {
			agent = agentB
		}
		wg.Go(func() { l.lane(lctx, i, agent) })
	}
	for i := range approvers {
		wg.Go(func() { l.approve(lctx, i) })
	}

	// The faults, until the load has lasted loadFor and submitted minRuns
	// (a quarter longer at most: the schedule stays within its time).
	loadStart := time.Now()
	count := map[string]int{}
	var deck []string
	deployedAt := time.Duration(0)
	for time.Since(loadStart) < loadFor || l.submittedCount() < minRuns && time.Since(loadStart) < loadFor+loadFor/4 {
		if deployedAt == 0 && time.Since(loadStart) >= loadFor/2 {
			// The deploy: w2 is SIGKILLed and comes back on version 2 of
			// agent A, made the fleet's (--replace-definition). New runs of
			// A go to it alone; runs recorded on version 1 go on only on w1.
			deployedAt = time.Since(loadStart).Round(100 * time.Millisecond)
			w2 := workers["w2"]
			w2.kill(t)
			w2.env = []string{envFaultWorker + "=" + deployed}
			w2.args = serveArgs(files[deployed], "--replace-definition")
			w2.start(t)
			t.Logf("%v: deploy: w2 SIGKILLed, back as %s on %s version 2 (%s)", deployedAt, deployed, agentA, defs[deployed][agentA][:12])
		}
		// A process that exited by itself (the audit reports it) is
		// started again, as its supervisor would.
		for _, s := range slots {
			if s.revive(t) {
				t.Logf("%v: %s had exited by itself; started again", time.Since(loadStart).Round(100*time.Millisecond), s.name)
			}
		}
		if len(deck) == 0 {
			deck = slices.Clone(fl.kinds)
			rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		kind := deck[0]
		deck = deck[1:]
		gap := time.Second + time.Duration(rng.Int64N(int64(3*time.Second)))
		w := comps[rng.IntN(3)]
		pause := 500*time.Millisecond + time.Duration(rng.Int64N(int64(4*time.Second)))
		hold := time.Second + time.Duration(rng.Int64N(int64(schedMaxStop-time.Second)))
		time.Sleep(gap) // the schedule's pace
		at := time.Since(loadStart).Round(100 * time.Millisecond)
		var c *component
		switch kind {
		case "kill-worker", "stop-worker":
			c = w
		case "kill-interceptor", "stop-interceptor":
			c = guardC
		case "kill-nats", "stop-nats":
			c = fl.servers[0]
			pause = time.Second + time.Duration(rng.Int64N(int64(9*time.Second)))
		default:
			t.Logf("%v: %s", at, fl.nodes.deal(ctx, t, kind))
			count[kind]++
			continue
		}
		if strings.HasPrefix(kind, "kill") {
			d := c.crash(t, pause)
			t.Logf("%v: SIGKILL %s, down %v", at, c.name, d.Round(100*time.Millisecond))
		} else {
			c.freeze(t, hold)
			t.Logf("%v: SIGSTOP %s for %v", at, c.name, hold.Round(100*time.Millisecond))
		}
		count[kind]++
		count[kind+" "+c.name]++
	}
	l.stop.Store(true)
	loadTime := time.Since(loadStart)
	submitted := l.submittedCount()
	t.Logf("faults stopped after %v; %d runs submitted", loadTime.Round(time.Second), submitted)
	if submitted < minRuns {
		t.Errorf("only %d runs were submitted in %v, want at least %d", submitted, loadTime.Round(time.Second), minRuns)
	}
	for _, k := range fl.kinds {
		if count[k] < 3 && loadFor >= schedLoad {
			t.Errorf("fault %s happened %d times, want several", k, count[k])
		}
	}
	for _, s := range slots {
		if s.revive(t) {
			t.Logf("%s had exited by itself; started again", s.name)
		}
	}

	// The cluster whole again: every stream with its leader and two
	// current followers.
	var quorumTime time.Duration
	if fl.cluster {
		qStart := time.Now()
		var why string
		if !bustest.Poll(ctx, schedQuorum, time.Second, func() bool {
			var ok bool
			ok, why = healthy(ctx, fl.admin)
			return ok
		}) {
			t.Errorf("the cluster did not have every stream with a leader and two current followers %v after the faults stopped: %s", schedQuorum, why)
		}
		quorumTime = time.Since(qStart)
		t.Logf("every stream whole again %v after the faults stopped", quorumTime.Round(100*time.Millisecond))
	}

	// Drain: every run ends (the approver answers what still waits).
	drainStart := time.Now()
	var left []string
	deadline := time.Now().Add(schedDrain)
	for {
		left = l.notEnded()
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	drainTime := time.Since(drainStart)
	stopLoad()
	wg.Wait()
	if len(left) > 0 {
		t.Errorf("%d runs had not ended %v after the faults stopped: %v", len(left), schedDrain, left[:min(len(left), 20)])
	}

	// Read it all back, as processes (as the auditor).
	rp, err := runProc(10*time.Minute, "observer", append([]string{"replay", "--nats", fl.urls(userAuditor), "--json"}, fl.replicas...)...)
	if err != nil || rp.code != 0 {
		t.Fatalf("observer replay --json: exit %d, %v\n%s", rp.code, err, rp.stderr)
	}
	evs := jsonEvents(t, rp.stdout)
	vr, err := runProc(10*time.Minute, "observer", append([]string{"verify", "--nats", fl.urls(userAuditor), "--json"}, fl.replicas...)...)
	if err != nil {
		t.Fatalf("observer verify --json: %v\n%s", err, vr.stderr)
	}
	var verdicts []*audit.RunVerdict
	for _, line := range strings.Split(strings.TrimSpace(vr.stdout), "\n") {
		if line == "" {
			continue
		}
		var vd audit.RunVerdict
		if err := json.Unmarshal([]byte(line), &vd); err != nil {
			t.Fatalf("observer verify --json line %q: %v", line, err)
		}
		verdicts = append(verdicts, &vd)
	}
	failures, fig := auditSchedule(&schedInput{evs: evs, verdicts: verdicts, verifyOK: vr.code == 0, root: root, guardLog: guardLog,
		defs: defs, serves: serves, load: l, workers: workers, plugin: fl.plugin, approver: fl.identity(userApprover)})
	for _, s := range slots {
		for _, x := range s.exited() {
			failures = append(failures, "a process exited by itself: "+x)
		}
	}

	// The figures.
	downs := map[string]string{}
	for _, c := range comps {
		downs[c.name] = c.downtime().Round(100 * time.Millisecond).String()
	}
	nodes := ""
	if fl.cluster {
		nodes = fmt.Sprintf("\n  cluster: two nodes or more down at once for %v in all; every stream whole again %v after the faults stopped",
			fl.nodes.noQuorum.Round(100*time.Millisecond), quorumTime.Round(100*time.Millisecond))
	}
	l.mu.Lock()
	t.Logf("schedule figures (seed %d, %s):\n  %s\n  faults: %s\n  downtime: %s%s\n  submissions: %d runs (%d by loop submit; %d loop submit processes failed), %d stuck;"+
		" approver: %d answers recorded, %d found recorded after a lost reply, %d found expired first, %d conflicting answers refused (and %d refused as the first, a reject, had ended the run), %d tries again\n"+
		"  wall time %v (load %v, drain %v); tracker read errors %d",
		seed, topology, fig, sortedCounts(count), sortedCounts(downs), nodes, submitted, l.cliSubmit, l.unackd, len(l.stuck),
		l.answered, l.recovered, l.expiredQ, l.refused, l.refusedEnded, l.retries,
		time.Since(begin).Round(time.Second), loadTime.Round(time.Second), drainTime.Round(time.Second), tr.readErrs)
	l.mu.Unlock()
	for _, g := range groupFailures(failures) {
		t.Errorf("%s", g)
	}
	if len(failures) > 0 {
		t.Errorf("seed %d: %d failures (replay: %s=%d)", seed, len(failures), envFaultSeed, seed)
	}
}

// schedDefinitions computes, for each worker as its executions name it,
// the digest of each agent it serves, from its agent file, and checks
// that the files of one version agree (they define each agent alike).
func schedDefinitions(t *testing.T, files map[string]string, serves map[string][]string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	byVersion := map[string]string{}
	for _, w := range slices.Sorted(maps.Keys(files)) {
		f, err := agents.Load(files[w])
		if err != nil {
			t.Fatalf("%s: %v", files[w], err)
		}
		out[w] = map[string]string{}
		for _, id := range serves[w] {
			a := f.Agent(id)
			if a == nil {
				t.Fatalf("%s: no agent %s", files[w], id)
			}
			d, err := a.Definition()
			if err != nil {
				t.Fatalf("%s: agent %s: %v", files[w], id, err)
			}
			key := id + "@" + d.Version
			if prev, ok := byVersion[key]; ok && prev != d.Digest {
				t.Fatalf("agent %s: the workers' files define it differently (%s, %s)", key, prev, d.Digest)
			}
			byVersion[key] = d.Digest
			out[w][id] = d.Digest
		}
	}
	return out
}
