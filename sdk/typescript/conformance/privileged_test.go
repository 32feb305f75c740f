package conformance_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// A plugin whose NATS user may not subscribe to a privileged stage's
// subject (deploy/nats does that for unprivileged plugins) is refused when
// it serves there, as remote.Serve is: intercept fails with kind "privileged",
// while its own stage serves.
func TestTypeScriptPrivilegedSubscriptionRefused(t *testing.T) {
	needSDK(t)
	opts := &server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		Users: []*server.User{
			{Username: "control", Password: "control"},
			{Username: "plugin-pii", Password: "pii", Permissions: &server.Permissions{
				Publish:   &server.SubjectPermission{Allow: []string{"_INBOX.>", "$SRV.>"}},
				Subscribe: &server.SubjectPermission{Allow: []string{"hookbus.hook.tool.before.pii", "$SRV.>", "_INBOX.>"}},
			}},
		},
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("control", "control"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ts := startTS(t, s.ClientURL(), nc, "CONFORMANCE_USER=control", "CONFORMANCE_PASS=control")
	as := map[string]any{"user": "plugin-pii", "pass": "pii"}

	err = ts.serve(t, "pii", []events.Stage{events.StageContextAssembled}, nil, as)
	var ce *controlError
	if !errors.As(err, &ce) || ce.Kind != "privileged" || !strings.Contains(ce.Message, "hookbus.hook.context.assembled.pii") {
		t.Fatalf("serving context.assembled as an unprivileged user: %v, want a refusal of kind privileged naming the subject", err)
	}
	if err := ts.serve(t, "pii", []events.Stage{events.StageToolBefore}, nil, as); err != nil {
		t.Fatalf("serving its own stage: %v", err)
	}
}
