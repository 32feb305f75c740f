package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats.go"
)

// The hard-fault runs (make test-faults): every component a process of its
// own, faults dealt with SIGKILL. This file starts and kills nats-server
// processes; the binary is built from the module in go.mod.

// envFaults turns the hard-fault tests on (they take minutes; make test
// leaves them out).
const envFaults = "HOOKBUS_FAULTS"

// hardFaults skips t unless the hard-fault run was asked for.
func hardFaults(t *testing.T) {
	t.Helper()
	if os.Getenv(envFaults) == "" {
		t.Skipf("a hard-fault test: run it with make test-faults (%s=1)", envFaults)
	}
}

var natsBuild struct {
	once sync.Once
	path string
	err  error
}

// natsServerBin builds nats-server (the version go.mod names) once per test
// binary, next to the loop and observer binaries.
func natsServerBin(t *testing.T) string {
	t.Helper()
	natsBuild.once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		path := filepath.Join(bin, "nats-server")
		cmd := exec.Command("go", "build", "-o", path, "github.com/nats-io/nats-server/v2")
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			natsBuild.err = fmt.Errorf("go build nats-server: %v\n%s", err, out)
			return
		}
		natsBuild.path = path
	})
	if natsBuild.err != nil {
		t.Fatal(natsBuild.err)
	}
	return natsBuild.path
}

// natsNode is one nats-server process on its own store; it can be killed
// (SIGKILL) and started again on the same port and store.
type natsNode struct {
	name string
	addr string // client listener, host:port
	conf string
	dir  string // store

	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *bustest.Buffer // output of the current process
	done chan struct{}
}

// natsConf is the configuration of one node: JetStream on dir, and for a
// cluster node (routes non-empty) the cluster listener and routes.
func natsConf(name, addr, dir, clusterAddr string, routes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %s\nlisten: %q\n", name, addr)
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  max_memory_store: 256MB\n  max_file_store: 4GB\n}\n", dir)
	if clusterAddr != "" {
		fmt.Fprintf(&b, "cluster {\n  name: hookbus-faults\n  listen: %q\n  routes: [\n", clusterAddr)
		for _, r := range routes {
			fmt.Fprintf(&b, "    %q\n", "nats-route://"+r)
		}
		b.WriteString("  ]\n}\n")
	}
	return b.String()
}

// newNATSNode writes a node's configuration; start starts it.
func newNATSNode(t *testing.T, name, clusterAddr string, routes []string) *natsNode {
	t.Helper()
	dir := t.TempDir()
	n := &natsNode{name: name, addr: freeAddr(t), dir: filepath.Join(dir, "store"), conf: filepath.Join(dir, name+".conf")}
	if err := os.WriteFile(n.conf, []byte(natsConf(name, n.addr, n.dir, clusterAddr, routes)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.kill(t)
		if t.Failed() {
			t.Logf("nats-server %s output:\n%s", n.name, n.log())
		}
	})
	return n
}

// startNATS starts a single nats-server process with JetStream.
func startNATS(t *testing.T) *natsNode {
	t.Helper()
	n := newNATSNode(t, "single", "", nil)
	n.start(t)
	return n
}

// startNATSCluster starts a cluster of size nats-server processes, routed
// to each other.
func startNATSCluster(t *testing.T, size int) []*natsNode {
	t.Helper()
	routes := make([]string, size)
	for i := range routes {
		routes[i] = freeAddr(t)
	}
	nodes := make([]*natsNode, size)
	for i := range nodes {
		nodes[i] = newNATSNode(t, fmt.Sprintf("n%d", i+1), routes[i], routes)
	}
	for _, n := range nodes {
		n.start(t)
	}
	return nodes
}

func (n *natsNode) url() string { return "nats://" + n.addr }

// clusterURLs lists every node's URL, comma-separated (how clients fail over).
func clusterURLs(nodes []*natsNode) string {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.url()
	}
	return strings.Join(urls, ",")
}

// start starts the node's process and waits until it accepts clients.
func (n *natsNode) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(natsServerBin(t), "-c", n.conf)
	out := &bustest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	n.mu.Lock()
	n.cmd, n.out, n.done = cmd, out, done
	n.mu.Unlock()
	waitFor(t, 60*time.Second, func() bool {
		select {
		case <-done:
			t.Fatalf("nats-server %s exited:\n%s", n.name, out)
		default:
		}
		return strings.Contains(out.String(), "Server is ready")
	}, "nats-server %s to be ready:\n%s", n.name, out)
}

// kill SIGKILLs the node's process (no shutdown: no flush, no leader
// hand-over) and waits for it to be gone. Killing a dead node does nothing.
func (n *natsNode) kill(t *testing.T) {
	t.Helper()
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// log is the output of the node's current (or last) process.
func (n *natsNode) log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.out == nil {
		return ""
	}
	return n.out.String()
}

// nodeNamed finds a node by its server name.
func nodeNamed(t *testing.T, nodes []*natsNode, name string) *natsNode {
	t.Helper()
	for _, n := range nodes {
		if n.name == name {
			return n
		}
	}
	t.Fatalf("no node named %q", name)
	return nil
}

// adminBus is the test's own connection to the servers at urls
// (reconnecting forever) and a bus over it with the given replicas,
// provisioned.
func adminBus(t *testing.T, ctx context.Context, urls string, replicas int) *bus.Bus {
	t.Helper()
	b := newBus(t, connect(t, urls, nats.Name("hookbus-faults-test")), bus.WithReplicas(replicas))
	var err error
	waitFor(t, 60*time.Second, func() bool {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err = b.Provision(pctx)
		return err == nil
	}, "provisioning: %v", lazy(func() string { return fmt.Sprint(err) }))
	return b
}

// worker is one loop serve process.
type worker struct {
	*faultProc
	args []string
}

// startWorker starts loop serve with args and waits until it takes runs.
func startWorker(t *testing.T, args ...string) *worker {
	t.Helper()
	w := &worker{faultProc: startFaultProc(t, "loop", append([]string{"serve"}, args...)...), args: args}
	waitFor(t, 60*time.Second, func() bool {
		select {
		case <-w.done:
			t.Fatalf("loop serve exited %d:\n%s", w.code, w.stderr.String())
		default:
		}
		return strings.Contains(w.stderr.String(), "taking runs")
	}, "loop serve to take runs:\n%s", lazy(w.stderr.String))
	return w
}

// kill SIGKILLs the worker and waits for it to be gone.
func (w *worker) kill(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
}

// submitRuns queues one run per session (sessions prefix-000...), agent
// agent, and returns their ids in order.
func submitRuns(t *testing.T, ctx context.Context, b *bus.Bus, agent, prefix, prompt string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		req := &events.RunRequest{RunID: events.NewID(), AgentID: agent, SessionID: fmt.Sprintf("%s%03d", prefix, i), Prompt: prompt}
		if err := runs.New(b).Submit(ctx, req); err != nil {
			t.Fatalf("submit run %d: %v", i, err)
		}
		ids[i] = req.RunID
	}
	return ids
}

// ended counts the runs of agent whose end is recorded (run.completed or
// run.failed events, by distinct run); -1 when the stream cannot be read
// right now (a server down, a leader being elected).
func ended(ctx context.Context, b *bus.Bus, agent string) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	runs := map[string]bool{}
	_, err := b.Replay(ctx, bus.Filter{Agent: agent, Stages: []events.Stage{events.StageRunCompleted, events.StageRunFailed}}, func(e *events.Event) error {
		runs[e.RunID] = true
		return nil
	})
	if err != nil {
		return -1
	}
	return len(runs)
}

// waitEnded waits until n runs of agent have ended, failing after d with
// the workers' logs.
func waitEnded(t *testing.T, ctx context.Context, b *bus.Bus, agent string, n int, d time.Duration, ws ...*worker) {
	t.Helper()
	last := 0
	waitEvery(t, d, 250*time.Millisecond, func() bool {
		last = ended(ctx, b, agent)
		return last >= n
	}, "%d runs of %s to end (%s ended)%s", n, agent, lazy(func() string { return fmt.Sprint(last) }), lazy(func() string { return workerLogs(ws) }))
}

// workerLogs is the tail of each worker's log, for a failure message.
func workerLogs(ws []*worker) string {
	var b strings.Builder
	for i, w := range ws {
		s := w.stderr.String()
		if len(s) > 4000 {
			s = "..." + s[len(s)-4000:]
		}
		fmt.Fprintf(&b, "\n--- worker %d:\n%s", i+1, s)
	}
	return b.String()
}

// waitEvery polls cond every interval until it holds, failing t after d.
// For conditions that cost a request or more (waitFor polls every 5ms).
func waitEvery(t *testing.T, d, every time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !bustest.Poll(context.Background(), d, every, cond) {
		t.Fatalf("%s: not met within %v", fmt.Sprintf(format, args...), d)
	}
}
