package policies_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/policies"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/policy"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// denyRm is a policy denying rm -rf in shell commands; message says why.
func denyRm(message string) string {
	return `name: no-rm-rf
match:
  kinds: [shell]
validations:
- name: rm-rf
  expression: '!action.command.matches("rm\\s+-[a-zA-Z]*r[a-zA-Z]*f")'
  message: ` + message + `
`
}

// parse parses src, which holds one policy.
func parse(t *testing.T, src string) *policy.Policy {
	t.Helper()
	return parseB(t, src)
}

func parseB(t testing.TB, src string) *policy.Policy {
	t.Helper()
	ps, err := policy.Parse("test.yaml", []byte(src))
	if err != nil || len(ps) != 1 {
		t.Fatalf("parse: %d policies, %v", len(ps), err)
	}
	return ps[0]
}

// shell is a tool.before of hookbus' Bash running command.
func shell(t *testing.T, command string) *events.Event {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"command": command})
	call := events.ToolCall{ID: "c1", Name: "Bash", Arguments: args}.WithAction(events.HarnessHookbus)
	e, err := events.New(events.StageToolBefore, events.Meta{Source: "hookbus/test", AgentID: "demo", SessionID: "s1", RunID: "r1", Step: 1, Seq: 1},
		events.ToolBefore{Call: call})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// env is a provisioned bus with a store and a chain its policies are
// synced to.
type env struct {
	b     *bus.Bus
	st    *policies.Store
	chain *interceptors.Chain
	sync  *policies.Syncer
	log   *bustest.Buffer
}

func newEnv(t *testing.T, before func(*policies.Store), hist policy.History) *env {
	t.Helper()
	log := &bustest.Buffer{}
	b := bustest.StartBus(t, bus.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	e := &env{b: b, st: policies.New(b), chain: interceptors.NewChain(), log: log}
	if before != nil {
		before(e.st)
	}
	s, err := policies.Sync(testCtx(t), b, e.chain, hist)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	e.sync = s
	return e
}

func (e *env) put(t *testing.T, src string) policies.Record {
	t.Helper()
	rec, _, err := e.st.Put(testCtx(t), parse(t, src), events.Actor{Channel: events.ChannelCLI, DeclaredBy: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func (e *env) synced(t *testing.T) {
	t.Helper()
	if err := e.sync.Synced(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// decide runs the chain on a Bash call of command.
func (e *env) decide(t *testing.T, command string) *interceptors.ChainResult {
	t.Helper()
	out, err := e.chain.Run(testCtx(t), shell(t, command))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// denied returns the message and the policy of the chain's deny, or
// fails.
func denied(t *testing.T, out *interceptors.ChainResult) (string, *events.PolicyHit) {
	t.Helper()
	if out.Decision != interceptors.Deny {
		t.Fatalf("decision %s, want deny (calls %+v)", out.Decision, out.Records)
	}
	for _, r := range out.Records {
		if r.Policy != nil {
			if d := r.HookDecided(); d.Policy != r.Policy {
				t.Fatalf("hook.decided does not carry the policy: %+v", d)
			}
			return out.Reason, r.Policy
		}
	}
	t.Fatalf("no call of the chain carries a policy: %+v", out.Records)
	return "", nil
}

// Put stores a policy that compiles, recording who applied it; Get, List
// and Delete read and remove it; a second Put of the same version changes
// nothing.
func TestStorePutGetListDelete(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	st := policies.New(b)
	p := parse(t, denyRm("no rm -rf"))
	rec, changed, err := st.Put(ctx, p, events.Actor{Channel: events.ChannelCLI, DeclaredBy: "ops"})
	if err != nil || !changed {
		t.Fatalf("Put: %v, changed %v", err, changed)
	}
	if rec.Name != "no-rm-rf" || rec.Version != p.Version || !strings.HasPrefix(rec.Version, "sha256:") || rec.AppliedBy.Identity == "" ||
		rec.AppliedBy.Channel != events.ChannelCLI || rec.AppliedBy.DeclaredBy != "ops" || rec.AppliedAt.IsZero() {
		t.Fatalf("record %+v", rec)
	}
	got, err := st.Get(ctx, "no-rm-rf")
	if err != nil || got.Source != string(p.Source) || got.Version != rec.Version || got.AppliedBy != rec.AppliedBy {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	again, changed, err := st.Put(ctx, parse(t, denyRm("no rm -rf")), events.Actor{})
	if err != nil || changed || again.Revision != got.Revision {
		t.Fatalf("second Put of the same version: changed %v, revision %d (was %d), %v", changed, again.Revision, got.Revision, err)
	}
	if _, err := st.Get(ctx, "other"); !errors.Is(err, policies.ErrNotFound) {
		t.Fatalf("Get of a missing policy: %v", err)
	}
	// Other keys of the bucket are not policies.
	if err := remote.NewRegistry(b).Grant(ctx, "plugin-pii"); err != nil {
		t.Fatal(err)
	}
	if err := st.PutTest(ctx, "no-rm-rf", json.RawMessage(`{"flips":0}`)); err != nil {
		t.Fatal(err)
	}
	recs, skipped, err := st.List(ctx)
	if err != nil || len(skipped) != 0 || len(recs) != 1 || recs[0].Name != "no-rm-rf" {
		t.Fatalf("List: %+v, %v, %v", recs, skipped, err)
	}
	if res, err := st.GetTest(ctx, "no-rm-rf"); err != nil || string(res) != `{"flips":0}` {
		t.Fatalf("GetTest: %s, %v", res, err)
	}
	if err := st.PutTest(ctx, "no-rm-rf", json.RawMessage(`{`)); !errors.Is(err, policies.ErrInvalidOption) {
		t.Fatalf("PutTest of a result that is not JSON: %v", err)
	}
	if err := st.Delete(ctx, "no-rm-rf", events.Actor{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "no-rm-rf"); !errors.Is(err, policies.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := st.Delete(ctx, "no-rm-rf", events.Actor{}); !errors.Is(err, policies.ErrNotFound) {
		t.Fatalf("second Delete: %v", err)
	}
	// The grant is still a grant: the policy keys did not disturb it.
	if g, err := remote.NewRegistry(b).Granted(ctx); err != nil || len(g) != 1 || g[0] != "plugin-pii" {
		t.Fatalf("grants: %v, %v", g, err)
	}
}

// A policy that does not compile is refused, naming where, and nothing
// is stored.
func TestStoreRefusesABadPolicy(t *testing.T) {
	b := bustest.StartBus(t)
	ctx := testCtx(t)
	st := policies.New(b)
	bad := strings.Replace(denyRm("x"), "action.command.matches", "action.no_such_field.matches", 1)
	_, _, err := st.Put(ctx, parse(t, bad), events.Actor{})
	if !errors.Is(err, policy.ErrInvalid) || !strings.Contains(err.Error(), "test.yaml:") {
		t.Fatalf("Put of a policy that does not type-check: %v", err)
	}
	if recs, skipped, err := st.List(ctx); err != nil || len(recs)+len(skipped) != 0 {
		t.Fatalf("after the refusal: %+v %v %v", recs, skipped, err)
	}
	// A policy whose source is not itself is refused too.
	p := parse(t, denyRm("x"))
	p.Source = []byte(denyRm("y"))
	if _, _, err := st.Put(ctx, p, events.Actor{}); !errors.Is(err, policy.ErrInvalid) {
		t.Fatalf("Put of a policy whose source differs: %v", err)
	}
}
