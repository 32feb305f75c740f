package natsconf_test

import (
	"errors"
	"testing"

	"github.com/hookbus/hookbus/bus/policies"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/policy"
)

const noRmRf = `name: no-rm-rf
match:
  kinds: [shell]
validations:
- expression: '!action.command.contains("rm -rf")'
  message: rm -rf is not allowed here
`

// Only the admin applies or deletes a policy: the loop user's writes are
// refused by the server, naming the permission, and change nothing; the
// loop user reads the policies and follows them (policies.Sync), as
// every worker does.
func TestOnlyTheAdminAppliesPolicies(t *testing.T) {
	f := startSingle(t)
	ctx := testContext(t)
	ab, _, _ := f.userBus(t, "admin")
	lb, _, _ := f.userBus(t, "loop")
	ps, err := policy.Parse("no-rm-rf.yaml", []byte(noRmRf))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := policies.New(lb).Put(ctx, ps[0], events.Actor{}); !errors.Is(err, policies.ErrPermission) {
		t.Fatalf("Put as loop: %v, want a permission error", err)
	}
	rec, _, err := policies.New(ab).Put(ctx, ps[0], events.Actor{})
	if err != nil {
		t.Fatalf("Put as admin: %v", err)
	}
	if rec.AppliedBy.Identity != "admin" {
		t.Fatalf("applied by %+v, want the admin as the server knows it", rec.AppliedBy)
	}
	for _, try := range []func() error{
		func() error { return policies.New(lb).Delete(ctx, "no-rm-rf", events.Actor{}) },
		func() error { return policies.New(lb).PutTest(ctx, "no-rm-rf", []byte(`{}`)) },
	} {
		if err := try(); !errors.Is(err, policies.ErrPermission) {
			t.Fatalf("a write as loop: %v, want a permission error", err)
		}
	}
	chain := interceptors.NewChain()
	s, err := policies.Sync(ctx, lb, chain, nil)
	if err != nil {
		t.Fatalf("Sync as loop: %v", err)
	}
	defer s.Stop()
	if got := s.Loaded(); got["no-rm-rf"] != rec.Version {
		t.Fatalf("loaded as loop: %v, want %s", got, rec.Version)
	}
	if got, err := policies.New(lb).Get(ctx, "no-rm-rf"); err != nil || got.Version != rec.Version {
		t.Fatalf("Get as loop: %+v, %v", got, err)
	}
}
