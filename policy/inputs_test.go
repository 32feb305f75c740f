package policy_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/policy"
)

// TestInputsShared: policies sharing their input decide on the payload
// as the earlier ones in the chain left it. strip-sudo rewrites "sudo rm
// -rf /x", then no-rm denies the "rm -rf /x" it became; without sudo,
// strip-sudo does not apply and no-rm denies the call as it came.
func TestInputsShared(t *testing.T) {
	src, err := os.ReadFile("testdata/rules/strip-sudo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	noRm := "name: no-rm\norder: 2\nmatch:\n  kinds: [shell]\nvalidations:\n- expression: '!action.command.startsWith(\"rm \")'\n  message: no rm\n"
	for _, shared := range []bool{false, true} {
		chain := interceptors.NewChain()
		inputs := policy.NewInputs()
		for _, s := range []string{string(src), noRm} {
			var opts []policy.Option
			if shared {
				opts = append(opts, policy.WithInputs(inputs))
			}
			c := compile(t, s, opts...)
			for _, reg := range c.Registrations() {
				if _, err := chain.Register(reg, c.Interceptor()); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, c := range []struct {
			cmd  string
			want interceptors.Kind
		}{{"sudo rm -rf /x", interceptors.Deny}, {"sudo ls /x", interceptors.Modify}, {"rm -rf /y", interceptors.Deny}, {"ls", interceptors.Allow}} {
			ev := toolBefore(t, events.HarnessClaude, "a", "s", "Bash", `{"command":"`+c.cmd+`"}`)
			for range 2 { // the same event again: read again or shared, the same decision
				res, err := chain.Run(context.Background(), ev)
				if err != nil {
					t.Fatal(err)
				}
				if res.Decision != c.want {
					t.Errorf("shared %v: %q: %s (%s), want %s", shared, c.cmd, res.Decision, res.Reason, c.want)
				}
			}
		}
	}
}

func TestWithInputsNil(t *testing.T) {
	ps, err := policy.Parse("p.yaml", []byte("name: p\nvalidations:\n- expression: 'true'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policy.Compile(ps[0], policy.WithInputs(nil)); !errors.Is(err, policy.ErrInvalidOption) {
		t.Fatalf("WithInputs(nil): %v, want ErrInvalidOption", err)
	}
}
