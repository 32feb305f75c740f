package natsconf_test

import (
	"context"
	"testing"

	"github.com/hookbus/hookbus/bus"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// connectCreds connects to s with a user's creds file (the user JWT and
// its seed, as nsc writes them); t.Cleanup closes the connection.
func connectCreds(t *testing.T, s *server.Server, creds string) (*nats.Conn, asyncErrors) {
	t.Helper()
	errs := make(asyncErrors, 64)
	nc, err := nats.Connect(s.ClientURL(), nats.Name("natsconf-test-"+creds), nats.UserCredentials(creds),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("connect with %s: %v", creds, err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// The operator example (operator/, written by nsc) passes nats-server's
// check, runs, and takes its users' creds: admin provisions the bus in
// account HOOKBUS, loop finds it provisioned and may not delete a stream;
// a connection without creds is refused.
func TestOperatorExample(t *testing.T) {
	opts := checkConfig(t, "operator/operator.conf")
	if opts.SystemAccount == "" || len(opts.TrustedOperators) != 1 {
		t.Fatalf("operator.conf: system account %q, %d operators", opts.SystemAccount, len(opts.TrustedOperators))
	}
	s := startServer(t, confOptions(t, "operator/operator.conf"))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	admin, _ := connectCreds(t, s, "operator/admin.creds")
	ab, err := bus.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := ab.Provision(ctx); err != nil {
		t.Fatalf("provision as admin: %v", err)
	}
	noErrors(t, admin)

	loop, errs := connectCreds(t, s, "operator/loop.creds")
	lb, err := bus.New(loop)
	if err != nil {
		t.Fatal(err)
	}
	if err := lb.CheckProvisioned(ctx); err != nil {
		t.Fatalf("CheckProvisioned as loop: %v", err)
	}
	denyPublish(t, loop, errs, "$JS.API.STREAM.DELETE."+lb.Names().Events)

	if nc, err := nats.Connect(s.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("a connection without creds was accepted")
	}
}
