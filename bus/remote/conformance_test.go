package remote_test

import (
	"context"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/interceptors/interceptorstest"
)

// TestRemoteConformance runs the interception conformance suite over NATS:
// every interceptor of the suite is served with Serve on one connection and
// called through a Remote client on another (on a provisioned bus: a
// request too large for a message goes by claim check).
func TestRemoteConformance(t *testing.T) {
	srv, nc := bustest.Start(t)
	client := bustest.Provision(t, bustest.Conn(t, srv))
	interceptorstest.Run(t, func(t *testing.T, reg interceptors.Registration, ic interceptors.Interceptor) interceptors.Interceptor {
		svc, err := remote.Serve(context.Background(), nc, remote.ServeConfig{Plugin: reg.Plugin, Stages: []events.Stage{reg.Stage}}, ic)
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		t.Cleanup(func() {
			if err := svc.Stop(); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
		r, err := remote.NewClient(client, reg)
		if err != nil {
			t.Fatalf("Remote: %v", err)
		}
		return r
	}, interceptorstest.Features{PanicKind: events.FailError})
}
