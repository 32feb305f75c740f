package policies_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus/policies"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/policy"
)

// A running Sync picks up a policy stored before it started, a new
// version, a deletion and a new policy, without a restart; the chain's
// decision names the policy in force and its version.
func TestSyncFollowsTheStoredPolicies(t *testing.T) {
	var v1 policies.Record
	e := newEnv(t, func(st *policies.Store) {
		rec, _, err := st.Put(testCtx(t), parse(t, denyRm("no rm -rf")), events.Actor{})
		if err != nil {
			t.Fatal(err)
		}
		v1 = rec
	}, nil)
	if got := e.sync.Loaded(); got["no-rm-rf"] != v1.Version {
		t.Fatalf("loaded at start: %v", got)
	}
	msg, hit := denied(t, e.decide(t, "rm -rf x"))
	if !strings.Contains(msg, "no rm -rf") || hit.Name != "no-rm-rf" || hit.Version != v1.Version || hit.Rule != "rm-rf" {
		t.Fatalf("v1: %q, %+v", msg, hit)
	}
	if out := e.decide(t, "ls"); out.Decision == interceptors.Deny {
		t.Fatalf("ls denied: %+v", out)
	}

	v2 := e.put(t, denyRm("rm -rf is not allowed here"))
	e.synced(t)
	msg, hit = denied(t, e.decide(t, "rm -rf x"))
	if !strings.Contains(msg, "not allowed here") || hit.Version != v2.Version || v2.Version == v1.Version {
		t.Fatalf("v2: %q, %+v (v1 %s, v2 %s)", msg, hit, v1.Version, v2.Version)
	}

	if err := e.st.Delete(testCtx(t), "no-rm-rf", events.Actor{}); err != nil {
		t.Fatal(err)
	}
	e.synced(t)
	if out := e.decide(t, "rm -rf x"); out.Decision == interceptors.Deny {
		t.Fatalf("denied after the policy was deleted: %+v", out)
	}
	if got := e.sync.Loaded(); len(got) != 0 {
		t.Fatalf("loaded after delete: %v", got)
	}
	if regs := e.chain.Registrations(events.StageToolBefore); len(regs) != 0 {
		t.Fatalf("registrations after delete: %+v", regs)
	}

	// A policy for another stage set: registered where it matches.
	e.put(t, `name: no-curl
match:
  kinds: [shell]
  stages: [tool.before]
validations:
- expression: '!action.command.startsWith("curl ")'
  message: no curl
`)
	e.synced(t)
	if msg, hit := denied(t, e.decide(t, "curl http://x")); msg == "" || hit.Name != "no-curl" {
		t.Fatalf("no-curl: %q %+v", msg, hit)
	}
	// The grants' reader takes no policy for a plugin.
	trust, err := remote.WatchTrust(testCtx(t), e.b)
	if err != nil {
		t.Fatal(err)
	}
	defer trust.Stop()
	if err := trust.Synced(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(e.log.String(), "grants nothing") || len(trust.Plugins()) != 0 {
		t.Fatalf("the trust watch read a policy as a grant: %v\n%s", trust.Plugins(), e.log)
	}
	e.sync.Stop()
	if regs := e.chain.Registrations(events.StageToolBefore); len(regs) != 0 {
		t.Fatalf("registrations after Stop: %+v", regs)
	}
}

// A stored entry that no longer reads or compiles (written around Put)
// does not lift the version in force, and the log says why; a good
// version later replaces it.
func TestSyncKeepsThePolicyInForceOverABadEntry(t *testing.T) {
	e := newEnv(t, nil, nil)
	v1 := e.put(t, denyRm("no rm -rf"))
	e.synced(t)
	kv, err := e.b.JetStream().KeyValue(testCtx(t), e.b.Names().Trust)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`{"name":"no-rm-rf","version":"sha256:0","source":"name: no-rm-rf\nvalidations:\n- expression: 'nope('\n"}`,
		`not json`,
	} {
		if _, err := kv.Put(testCtx(t), policies.Key("no-rm-rf"), []byte(bad)); err != nil {
			t.Fatal(err)
		}
		e.synced(t)
		if _, hit := denied(t, e.decide(t, "rm -rf x")); hit.Version != v1.Version {
			t.Fatalf("after a bad entry %q: %+v, want v1 %s in force", bad, hit, v1.Version)
		}
	}
	if !strings.Contains(e.log.String(), "stored policy not loaded; the version loaded before stays in force") {
		t.Fatalf("log:\n%s", e.log)
	}
	v2 := e.put(t, denyRm("v2"))
	e.synced(t)
	if _, hit := denied(t, e.decide(t, "rm -rf x")); hit.Version != v2.Version {
		t.Fatalf("after v2: %+v", hit)
	}
}

// A process with no history loads no policy that reads it, says so, and
// loads the others; one with a history loads it.
func TestSyncWithoutHistory(t *testing.T) {
	counted := `name: shell-rate
match:
  kinds: [shell]
counters:
- name: shell
  key: agent
  window: 1h
validations:
- expression: counters.shell < 2
  message: too many shell calls
`
	seen := `name: no-exfil
match:
  kinds: [shell]
validations:
- expression: '!session.seen("file.read", "\\.env$")'
  message: no network after reading .env
`
	e := newEnv(t, func(st *policies.Store) {
		for _, src := range []string{counted, seen, denyRm("no rm -rf")} {
			if _, _, err := st.Put(testCtx(t), parse(t, src), events.Actor{}); err != nil {
				t.Fatalf("Put: %v", err) // stored: a worker with a history applies them
			}
		}
	}, nil)
	if got := e.sync.Loaded(); len(got) != 1 || got["no-rm-rf"] == "" {
		t.Fatalf("loaded without a history: %v", got)
	}
	for _, name := range []string{"shell-rate", "no-exfil"} {
		if !strings.Contains(e.log.String(), "policy="+name) {
			t.Fatalf("log does not say why %s is not loaded:\n%s", name, e.log)
		}
	}
	if out := e.decide(t, "ls"); out.Decision == interceptors.Deny {
		t.Fatalf("ls: %+v", out)
	}

	h := newEnv(t, func(st *policies.Store) {
		if _, _, err := st.Put(testCtx(t), parse(t, counted), events.Actor{}); err != nil {
			t.Fatal(err)
		}
	}, policy.NewMemory())
	if got := h.sync.Loaded(); got["shell-rate"] == "" {
		t.Fatalf("loaded with a history: %v\n%s", got, h.log)
	}
}

// ForStages loads only the policies of the stages a process decides on:
// the others are not compiled.
func TestSyncForStages(t *testing.T) {
	after := `name: after-warn
match:
  stages: [tool.after]
validations:
- expression: 'true'
  action: warn
`
	var loaded map[string]string
	e := newEnv(t, func(st *policies.Store) {
		for _, src := range []string{denyRm("no rm -rf"), after} {
			if _, _, err := st.Put(testCtx(t), parse(t, src), events.Actor{}); err != nil {
				t.Fatal(err)
			}
		}
	}, nil)
	if got := e.sync.Loaded(); len(got) != 2 {
		t.Fatalf("without ForStages: %v", got)
	}
	for stage, want := range map[events.Stage]string{events.StageToolBefore: "no-rm-rf", events.StageToolAfter: "after-warn"} {
		s, err := policies.Sync(testCtx(t), e.b, interceptors.NewChain(), nil, policies.ForStages(stage))
		if err != nil {
			t.Fatal(err)
		}
		loaded = s.Loaded()
		s.Stop()
		if len(loaded) != 1 || loaded[want] == "" {
			t.Fatalf("ForStages(%s): %v, want %s only", stage, loaded, want)
		}
	}
	if _, err := policies.Sync(testCtx(t), e.b, interceptors.NewChain(), nil, policies.ForStages(events.StageRunCompleted)); !errors.Is(err, policies.ErrInvalidOption) {
		t.Fatalf("ForStages(run.completed): %v", err)
	}
}

// The kill switch turns a policy off as it does any plugin ("observer
// hooks disable policy-NAME"): its calls are skipped, recorded as such,
// until it is enabled again.
func TestKillSwitchTurnsAPolicyOff(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := testCtx(t)
	trust, err := remote.WatchTrust(ctx, e.b)
	if err != nil {
		t.Fatal(err)
	}
	defer trust.Stop()
	chain := interceptors.NewChain(interceptors.WithTrust(trust))
	hs, err := remote.SyncHooks(ctx, e.b, chain, trust)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Stop()
	s, err := policies.Sync(ctx, e.b, chain, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	e.chain, e.sync = chain, s
	e.put(t, denyRm("no rm -rf"))
	e.synced(t)
	denied(t, e.decide(t, "rm -rf x"))

	reg := remote.NewRegistry(e.b)
	if err := reg.Disable(ctx, "policy-no-rm-rf", interceptors.Disabled{Reason: "too strict"}); err != nil {
		t.Fatal(err)
	}
	if err := hs.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	out := e.decide(t, "rm -rf x")
	if out.Decision == interceptors.Deny || len(out.Records) != 1 || out.Records[0].Decision != interceptors.Skipped {
		t.Fatalf("disabled policy: %s, %+v", out.Decision, out.Records)
	}
	if err := reg.Enable(ctx, "policy-no-rm-rf", events.Actor{}); err != nil {
		t.Fatal(err)
	}
	if err := hs.Synced(ctx); err != nil {
		t.Fatal(err)
	}
	denied(t, e.decide(t, "rm -rf x"))
}
