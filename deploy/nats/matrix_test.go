package natsconf_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// A surface is one subject (or JetStream API) of hookbus and the users of
// accounts.conf that may publish to it (op "pub") or subscribe to it (op
// "sub", in queue group queue when set). Every other user is refused.
// docs/SECURITY.md ("What each credential can do") is this table in
// words.
type surface struct {
	what    string
	op      string
	subject string
	queue   string
	allowed []string
}

// matrixUsers are the users of accounts.conf the matrix covers; the admin
// has no permissions block (everything in the HOOKBUS account).
var matrixUsers = []string{"loop", "auditor", "approver", "alice", "webui", "checkpointer", "witness", "plugin-pii", "plugin-policy"}

var approvers = []string{"approver", "alice", "webui"}

// readers read the events and large payloads.
var readers = []string{"loop", "auditor", "approver", "alice", "webui", "checkpointer"}

func users(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

const ckpt = "HOOKBUS_EVENTS.hookbus-checkpointer"

var surfaces = []surface{
	// The record.
	{"append an event", "pub", "hookbus.evt.demo.s1.intake", "", []string{"loop"}},
	{"answer an approval as approver", "pub", "hookbus.evt.demo.s1.approval.resolved.approver", "", []string{"approver"}},
	{"answer an approval as alice", "pub", "hookbus.evt.demo.s1.approval.resolved.alice", "", []string{"alice"}},
	{"answer an approval as webui", "pub", "hookbus.evt.demo.s1.approval.resolved.webui", "", []string{"webui"}},
	{"answer an approval as loop", "pub", "hookbus.evt.demo.s1.approval.resolved.loop", "", nil},
	{"read the events (stream info)", "pub", "$JS.API.STREAM.INFO.HOOKBUS_EVENTS", "", readers},
	{"read an event by sequence", "pub", "$JS.API.DIRECT.GET.HOOKBUS_EVENTS", "", readers},
	{"delete a message of the events", "pub", "$JS.API.STREAM.MSG.DELETE.HOOKBUS_EVENTS", "", nil},
	{"purge the events", "pub", "$JS.API.STREAM.PURGE.HOOKBUS_EVENTS", "", nil},
	{"delete the events stream", "pub", "$JS.API.STREAM.DELETE.HOOKBUS_EVENTS", "", nil},
	{"change the events stream", "pub", "$JS.API.STREAM.UPDATE.HOOKBUS_EVENTS", "", nil},
	{"create a stream", "pub", "$JS.API.STREAM.CREATE.EVIL", "", nil},
	{"subscribe to the events' subjects", "sub", "hookbus.evt.>", "", nil},

	// Runs, wake-ups, dead letters, interception.
	{"submit a run", "pub", "hookbus.run.demo", "", []string{"loop"}},
	{"schedule a wake-up", "pub", "hookbus.wake.demo.r1", "", []string{"loop"}},
	{"write a dead letter", "pub", "hookbus.dlq.billing", "", []string{"loop"}},
	{"call an interceptor", "pub", "hookbus.hook.tool.before.plugin-pii", "", []string{"loop"}},
	{"serve plugin-pii's tool.before", "sub", "hookbus.hook.tool.before.plugin-pii", "plugin-pii", []string{"plugin-pii"}},
	{"serve plugin-pii's context.assembled", "sub", "hookbus.hook.context.assembled.plugin-pii", "plugin-pii", nil},
	{"serve plugin-policy's context.assembled", "sub", "hookbus.hook.context.assembled.plugin-policy", "plugin-policy", []string{"plugin-policy"}},
	{"discover interceptors", "pub", "$SRV.INFO.plugin-pii", "", []string{"loop"}},
	{"take run requests", "pub", "$JS.API.CONSUMER.MSG.NEXT.HOOKBUS_RUNS.workers", "", []string{"loop"}},
	{"read the run queue's consumers", "pub", "$JS.API.CONSUMER.INFO.HOOKBUS_RUNS.workers", "", []string{"loop", "auditor"}},

	// The registry and the operator's bucket (trust grants, the kill
	// switch, budget limits, policies).
	{"register an interceptor", "pub", "$KV.hookbus_hooks.tool.before.plugin-pii", "", []string{"loop"}},
	{"kill switch where an older hookbus kept it", "pub", "$KV.hookbus_hooks.disabled.plugin-pii", "", nil},
	{"grant privileged_hooks", "pub", "$KV.hookbus_trust.plugin-pii", "", nil},
	{"disable a plugin", "pub", "$KV.hookbus_trust.disabled.plugin-pii", "", nil},
	{"set a budget limit", "pub", "$KV.hookbus_trust.limit.demo", "", nil},
	{"apply a policy", "pub", "$KV.hookbus_trust.policy.no-rm-rf", "", nil},
	{"record a policy's test", "pub", "$KV.hookbus_trust.policytest.no-rm-rf", "", nil},
	{"read the operator's bucket", "pub", "$JS.API.DIRECT.GET.KV_hookbus_trust", "", []string{"loop", "auditor"}},
	{"purge the registry", "pub", "$JS.API.STREAM.PURGE.KV_hookbus_hooks", "", nil},
	{"purge the operator's bucket", "pub", "$JS.API.STREAM.PURGE.KV_hookbus_trust", "", nil},
	{"delete a registry message", "pub", "$JS.API.STREAM.MSG.DELETE.KV_hookbus_hooks", "", nil},

	// Shared budgets.
	{"reserve a step", "pub", "$KV.hookbus_budgets.use.demo", "", []string{"loop"}},
	{"budget limit where an older hookbus kept it", "pub", "$KV.hookbus_budgets.limit.demo", "", nil},
	{"record what a step used", "pub", "hookbus.use.demo", "", []string{"loop"}},
	{"read what budgets used", "pub", "$JS.API.STREAM.INFO.HOOKBUS_USAGE", "", []string{"loop", "auditor"}},
	{"purge what budgets used", "pub", "$JS.API.STREAM.PURGE.HOOKBUS_USAGE", "", nil},
	{"delete a usage record", "pub", "$JS.API.STREAM.MSG.DELETE.HOOKBUS_USAGE", "", nil},

	// Policies' fleet-wide counters.
	{"add to a policy's counter", "pub", "hookbus.cnt.rate.shell.0a1b.300000.5", "", []string{"loop"}},
	{"read a policy's counter", "pub", "$JS.API.STREAM.MSG.GET.HOOKBUS_COUNTERS", "", []string{"loop", "auditor"}},
	{"read the counters stream", "pub", "$JS.API.STREAM.INFO.HOOKBUS_COUNTERS", "", []string{"loop", "auditor"}},
	{"purge the counters", "pub", "$JS.API.STREAM.PURGE.HOOKBUS_COUNTERS", "", nil},
	{"delete a counter", "pub", "$JS.API.STREAM.MSG.DELETE.HOOKBUS_COUNTERS", "", nil},
	{"purge the budgets bucket", "pub", "$JS.API.STREAM.PURGE.KV_hookbus_budgets", "", nil},

	// The decision cache and the fleet.
	{"cache a prompt hook's decision", "pub", "$KV.hookbus_decisions.k", "", []string{"loop"}},
	{"register an agent definition", "pub", "$KV.hookbus_agents.demo", "", []string{"loop"}},
	{"announce a worker", "pub", "$KV.hookbus_workers.w1", "", []string{"loop"}},
	{"renew a plugin's lease", "pub", "$KV.hookbus_leases.guard.i1", "", []string{"loop"}},
	{"read the plugins' leases", "pub", "$JS.API.STREAM.INFO.KV_hookbus_leases", "", []string{"loop", "auditor"}},

	// Large payloads.
	{"store a large payload", "pub", "$O.hookbus_payloads.C.x", "", []string{"loop"}},
	{"read a large payload", "pub", "$JS.API.DIRECT.GET.OBJ_hookbus_payloads", "", readers},
	{"purge large payloads", "pub", "$JS.API.STREAM.PURGE.OBJ_hookbus_payloads", "", nil},
	{"delete a large payload's message", "pub", "$JS.API.STREAM.MSG.DELETE.OBJ_hookbus_payloads", "", nil},
	{"delete the payloads stream", "pub", "$JS.API.STREAM.DELETE.OBJ_hookbus_payloads", "", nil},

	// Checkpoints and the checkpointer's durable consumer.
	{"store a checkpoint", "pub", "hookbus.checkpoint", "", []string{"checkpointer"}},
	{"ask a witness to cosign", "pub", "hookbus.witness.w1.add-checkpoint", "", []string{"checkpointer"}},
	{"answer as witness w1", "sub", "hookbus.witness.w1.add-checkpoint", "w1", []string{"witness"}},
	{"read the checkpoints", "pub", "$JS.API.DIRECT.GET.HOOKBUS_CHECKPOINTS", "", []string{"auditor", "checkpointer"}},
	{"purge the checkpoints", "pub", "$JS.API.STREAM.PURGE.HOOKBUS_CHECKPOINTS", "", nil},
	{"create the checkpointer's durable", "pub", "$JS.API.CONSUMER.CREATE." + ckpt, "", []string{"checkpointer"}},
	{"update the checkpointer's durable (with a filter)", "pub", "$JS.API.CONSUMER.CREATE." + ckpt + ".hookbus.evt.none", "", nil},
	{"create the checkpointer's durable (older clients)", "pub", "$JS.API.CONSUMER.DURABLE.CREATE." + ckpt, "", []string{"checkpointer"}},
	{"pull the checkpointer's durable", "pub", "$JS.API.CONSUMER.MSG.NEXT." + ckpt, "", []string{"checkpointer"}},
	{"read the checkpointer's durable", "pub", "$JS.API.CONSUMER.INFO." + ckpt, "", []string{"checkpointer"}},
	{"acknowledge for the checkpointer", "pub", "$JS.ACK." + ckpt + ".1.1.1.1.0", "", []string{"checkpointer"}},
	{"pause the checkpointer's durable", "pub", "$JS.API.CONSUMER.PAUSE." + ckpt, "", nil},
	{"delete the checkpointer's durable", "pub", "$JS.API.CONSUMER.DELETE." + ckpt, "", nil},
	{"reset the checkpointer's durable", "pub", "$JS.API.CONSUMER.RESET." + ckpt, "", nil},
	{"unpin the checkpointer's durable", "pub", "$JS.API.CONSUMER.UNPIN." + ckpt, "", nil},
	{"delete a reader's consumer of the events", "pub", "$JS.API.CONSUMER.DELETE.HOOKBUS_EVENTS.reader", "", readers[:5]},

	// Who a connection is, replies.
	{"ask who this connection is", "pub", "$SYS.REQ.USER.INFO", "", users([]string{"loop"}, approvers)},
	{"receive replies", "sub", "_INBOX.>", "", readers},
}

// TestPermissionsMatrix holds every row of the table above against
// accounts.conf in a real server: for each user and surface, the server
// refuses the publish or subscription (a permissions violation) exactly
// when the user is not among those allowed. Publishes carry an expected
// stream that no stream has, and JetStream API requests name nothing that
// exists, so an allowed row changes nothing; what an allowed user can do
// with a surface is held by the tests of each break.
func TestPermissionsMatrix(t *testing.T) {
	f := startSingle(t)
	for _, user := range matrixUsers {
		t.Run(user, func(t *testing.T) {
			nc, _ := f.connect(t, user)
			for _, s := range surfaces {
				want := slices.Contains(s.allowed, user)
				got := permitted(t, nc, s)
				if got != want {
					verb := map[bool]string{true: "may", false: "may not"}
					t.Errorf("%s %s %s (%s %s): the server says it %s", user, verb[want], s.what, s.op, s.subject, verb[got])
				}
			}
		})
	}
}

// permitted reports whether the server let nc publish or subscribe as s
// says: after a flush, a refusal has been read into LastError, which
// names the subject.
func permitted(t *testing.T, nc *nats.Conn, s surface) bool {
	t.Helper()
	var verb string
	switch s.op {
	case "pub":
		verb = "Publish to"
		m := nats.NewMsg(s.subject)
		m.Header.Set("Nats-Expected-Stream", "no-such-stream")
		m.Data = []byte("{")
		if err := nc.PublishMsg(m); err != nil {
			t.Fatalf("publish %s: %v", s.subject, err)
		}
	case "sub":
		verb = "Subscription to"
		var sub *nats.Subscription
		var err error
		if s.queue != "" {
			sub, err = nc.QueueSubscribeSync(s.subject, s.queue)
		} else {
			sub, err = nc.SubscribeSync(s.subject)
		}
		if err != nil {
			t.Fatalf("subscribe %s: %v", s.subject, err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	default:
		t.Fatalf("surface %q: op %q", s.what, s.op)
	}
	if err := nc.FlushTimeout(wait); err != nil {
		t.Fatalf("flush: %v", err)
	}
	violation := fmt.Sprintf("Permissions Violation for %s %q", verb, s.subject)
	last := nc.LastError()
	return last == nil || !strings.Contains(last.Error(), violation)
}
