package integration

import (
	"context"
	"fmt"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
)

// Environment of an interceptor process (this test binary, started again).
const (
	envInterceptor = "HOOKBUS_TEST_INTERCEPTOR" // the behaviour: deny-calculator
	envNATS        = "HOOKBUS_TEST_NATS"
	envPlugin      = "HOOKBUS_TEST_PLUGIN"
	envLease       = "HOOKBUS_TEST_LEASE" // registrations the process holds with a lease: its tools matcher
)

// interceptorProcess serves one interceptor over NATS until it is killed.
func interceptorProcess() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	nc, err := bus.Connect(os.Getenv(envNATS))
	if err != nil {
		fmt.Fprintln(os.Stderr, "interceptor:", err)
		return 1
	}
	defer nc.Close()
	var ic interceptors.Func
	stage, plugin := events.StageToolBefore, os.Getenv(envPlugin)
	switch os.Getenv(envInterceptor) {
	case "deny-calculator":
		ic = func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			var tb events.ToolBefore
			if err := req.Event.DecodeData(&tb); err != nil {
				return nil, err
			}
			return &interceptors.Decision{Kind: interceptors.Deny, Reason: fmt.Sprintf("pid %d forbids %s", os.Getpid(), tb.Call.Name)}, nil
		}
	case "hang":
		ic = func(ctx context.Context, _ *interceptors.Request) (*interceptors.Decision, error) {
			<-ctx.Done()
			select {} // never answers, even after its deadline
		}
	case "announce-and-hang":
		// Says which event it holds on receivedSubject (flushed, so the
		// test knows the request arrived), then never answers.
		ic = func(_ context.Context, req *interceptors.Request) (*interceptors.Decision, error) {
			_ = nc.Publish(receivedSubject(os.Getenv(envPlugin)), []byte(req.Event.ID))
			_ = nc.Flush()
			select {}
		}
	default: // the hard-fault runs' behaviours
		b, err := hardFaultBehaviour(nc, os.Getenv(envInterceptor), plugin)
		if err != nil {
			fmt.Fprintln(os.Stderr, "interceptor:", err)
			return 2
		}
		ic, stage, plugin = b.ic, b.stage, b.plugin
	}
	cfg := remote.ServeConfig{Plugin: plugin, Stages: []events.Stage{stage}}
	if tools, ok := os.LookupEnv(envLease); ok {
		cfg.Register = []interceptors.Registration{{Stage: stage, Tools: tools}}
	}
	svc, err := remote.Serve(ctx, nc, cfg, ic)
	if err != nil {
		fmt.Fprintln(os.Stderr, "interceptor:", err)
		return 1
	}
	fmt.Println("serving")
	<-ctx.Done()
	_ = svc.Stop()
	return 0
}

// startInterceptor starts this test binary as an interceptor process and
// waits until it serves.
func startInterceptor(t *testing.T, url, plugin, behaviour string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envInterceptor+"="+behaviour, envNATS+"="+url, envPlugin+"="+plugin)
	var out bustest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "serving") }, "the interceptor process to serve: %s", &out)
	return cmd
}
