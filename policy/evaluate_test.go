package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/policy"
)

func withMode(src, mode string) string {
	return strings.Replace(src, "name: no-rm\n", "name: no-rm\nmode: "+mode+"\n", 1)
}

// warn lets the call through with the message as a warning, recorded as
// a hit not enforced.
func TestModeWarn(t *testing.T) {
	c := compile(t, withMode(noRM, "warn"))
	res := evaluate(t, c, toolBefore(t, events.HarnessClaude, "a", "s1", "Bash", `{"command":"rm -rf /"}`))
	d := res.Decision
	if d.Kind != interceptors.Allow || len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "destructive shell command") {
		t.Fatalf("decision = %+v", d)
	}
	if h := res.Hit; h.Mode != "warn" || h.Action != "warn" || h.Enforced || h.Rule != "rm-rf" {
		t.Errorf("hit = %+v", h)
	}
	if regs := c.Registrations(); regs[0].Mode != "" {
		t.Errorf("warn registration mode = %q, want the default (mutate)", regs[0].Mode)
	}
}

// audit registers a shadow interceptor: called after the chain, its
// would-be deny recorded with the policy's hit, never applied.
func TestModeAudit(t *testing.T) {
	c := compile(t, withMode(noRM, "audit"))
	regs := c.Registrations()
	if len(regs) != 1 || regs[0].Mode != interceptors.ModeShadow || regs[0].Plugin != "policy-no-rm" || !regs[0].Builtin {
		t.Fatalf("registrations = %+v", regs)
	}
	recs := make(chan interceptors.CallRecord, 1)
	ch := interceptors.NewChain(interceptors.WithShadowSink(func(_ context.Context, _ *events.Event, rec interceptors.CallRecord) { recs <- rec }))
	if _, err := ch.Register(regs[0], c.Interceptor()); err != nil {
		t.Fatal(err)
	}
	ev := toolBefore(t, events.HarnessCodex, "a", "s1", "shell", `{"command":["bash","-lc","rm -rf victim"]}`)
	out, err := ch.Run(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if out.Decision != interceptors.Allow {
		t.Fatalf("audit changed the decision: %s", out.Decision)
	}
	out.Shadow(ev.ID)
	select {
	case rec := <-recs:
		hd := rec.HookDecided()
		if !hd.Shadow || hd.Decision != "deny" || hd.Policy == nil || hd.Policy.Mode != "audit" || hd.Policy.Enforced || hd.Policy.Action != "deny" {
			t.Errorf("shadow record = %+v (policy %+v)", hd, hd.Policy)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no shadow record")
	}
}

// A rollout enforces the policy in a stable share of sessions and audits
// it in the others.
func TestRollout(t *testing.T) {
	c := compile(t, strings.Replace(noRM, "name: no-rm\n", "name: no-rm\nrollout: 30\n", 1))
	enforced := 0
	for i := range 1000 {
		session := fmt.Sprintf("s%d", i)
		res := evaluate(t, c, toolBefore(t, events.HarnessHookbus, "a", session, "Bash", `{"command":"rm -rf x"}`))
		in := policy.InRollout("no-rm", session, 30)
		switch {
		case in && (res.Decision.Kind != interceptors.Deny || !res.Hit.Enforced || res.Hit.Mode != "enforce"):
			t.Fatalf("session %s in the rollout: %+v %+v", session, res.Decision, res.Hit)
		case !in && (res.Decision.Kind != interceptors.Allow || res.Hit.Enforced || res.Hit.Mode != "audit" || res.Hit.Action != "deny"):
			t.Fatalf("session %s outside the rollout: %+v %+v", session, res.Decision, res.Hit)
		}
		again := evaluate(t, c, toolBefore(t, events.HarnessHookbus, "a", session, "Bash", `{"command":"rm -rf y"}`))
		if again.Decision.Kind != res.Decision.Kind {
			t.Fatalf("session %s changed its place in the rollout", session)
		}
		if in {
			enforced++
		}
	}
	if enforced < 240 || enforced > 360 {
		t.Errorf("%d of 1000 sessions enforced, want about 300", enforced)
	}
}

const failing = `
name: needs-key
failurePolicy: %s
validations:
- name: key
  expression: call.arguments.mode == "safe"
`

// An expression that fails at run time is an ErrEvaluation; the chain
// applies the failure policy: fail denies, ignore lets the call through.
func TestFailurePolicy(t *testing.T) {
	ev := toolBefore(t, events.HarnessClaude, "a", "s1", "Bash", `{"command":"ls"}`)
	for _, tc := range []struct {
		policy string
		want   interceptors.Kind
	}{{"fail", interceptors.Deny}, {"ignore", interceptors.Allow}} {
		c := compile(t, fmt.Sprintf(failing, tc.policy))
		in, _ := policy.InputFrom(ev, "")
		res, err := c.Evaluate(context.Background(), in)
		if !errors.Is(err, policy.ErrEvaluation) || !strings.Contains(err.Error(), "no such key: mode") {
			t.Fatalf("err = %v", err)
		}
		if len(res.Steps) != 1 || !strings.HasPrefix(res.Steps[0].Outcome, "error: ") {
			t.Errorf("steps = %+v", res.Steps)
		}
		out, err := chainFor(t, c).Run(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if out.Decision != tc.want || out.Records[0].Failure == nil {
			t.Errorf("failurePolicy %s: chain decided %s (failure %+v), want %s and a recorded failure", tc.policy, out.Decision, out.Records[0].Failure, tc.want)
		}
	}
}

// The cost limit stops an evaluation that reads more than its estimate
// allowed for (a payload far larger than the sizes assumed).
func TestRuntimeCostLimit(t *testing.T) {
	src := `
name: costly
failurePolicy: fail
validations:
- expression: 'payload.call.arguments.items.filter(x, x == 1).size() == 0'
`
	ps, err := policy.Parse("costly.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	c, err := policy.Compile(ps[0], policy.WithCostLimit(300_000))
	if err != nil {
		t.Fatal(err)
	}
	small := toolBefore(t, events.HarnessClaude, "a", "s1", "Bash", `{"items":[0,0]}`)
	if res := evaluate(t, c, small); res.Decision.Kind != interceptors.Allow {
		t.Fatalf("small input: %+v", res.Decision)
	}
	big := toolBefore(t, events.HarnessClaude, "a", "s1", "Bash", `{"items":[`+strings.Repeat("0,", 200_000)+`0]}`)
	in, _ := policy.InputFrom(big, "")
	_, err = c.Evaluate(context.Background(), in)
	if !errors.Is(err, policy.ErrEvaluation) || !errors.Is(err, policy.ErrCostLimit) {
		t.Fatalf("err = %v, want ErrEvaluation and ErrCostLimit", err)
	}
}

// Ask pauses the call for a person, the message as the question.
func TestAsk(t *testing.T) {
	c := compile(t, `
name: deploys
validations:
- name: prod
  expression: '!action.command.contains("--env=prod")'
  messageExpression: '"deploy to production? " + action.command'
  action: ask
`)
	res := evaluate(t, c, toolBefore(t, events.HarnessGemini, "a", "s1", "run_shell_command", `{"command":"./deploy --env=prod"}`))
	if res.Decision.Kind != interceptors.Ask || res.Decision.Reason != "deploy to production? ./deploy --env=prod (policy deploys)" {
		t.Fatalf("decision = %+v", res.Decision)
	}
}

// The steps say what was evaluated in order; the rule that decided
// carries the values it read, short.
func TestStepsAndValues(t *testing.T) {
	c := compile(t, `
name: explain
matchConditions:
- name: shell
  expression: action.kind == "shell"
variables:
- name: cmd
  expression: action.command
validations:
- name: short
  expression: size(variables.cmd) < 1000
- name: no-rm
  expression: '!(variables.cmd.contains("rm") && agent == "dev" && harness == "claude")'
  message: no rm
`)
	long := strings.Repeat("x", 200)
	res := evaluate(t, c, toolBefore(t, events.HarnessClaude, "dev", "s1", "Bash", `{"command":"rm `+long+`"}`))
	var got []string
	for _, s := range res.Steps {
		got = append(got, s.Rule+"="+s.Outcome)
	}
	if strings.Join(got, " ") != "shell=true short=true no-rm=false: no rm" {
		t.Errorf("steps = %v", got)
	}
	v := res.Steps[2].Values
	if v["agent"] != `"dev"` || v["harness"] != `"claude"` || !strings.HasPrefix(v["variables.cmd"], `"rm xxx`) || len(v["variables.cmd"]) > 100 {
		t.Errorf("values = %v", v)
	}
	if res.Hit.Expression != c.Policy().Spec.Validations[1].Expression || res.Hit.Values["agent"] != `"dev"` {
		t.Errorf("hit = %+v", res.Hit)
	}
	// A false match condition: the policy does not apply.
	res = evaluate(t, c, toolBefore(t, events.HarnessClaude, "dev", "s1", "Read", `{"file_path":"rm"}`))
	if res.Decision != nil || res.Hit != nil || len(res.Steps) != 1 || res.Steps[0].Outcome != "false" {
		t.Errorf("not applied: %+v", res)
	}
}

// Registrations: one per stage, with the match, order and failure policy.
func TestRegistrations(t *testing.T) {
	c := compile(t, `
name: multi
order: -5
failurePolicy: ignore
match:
  stages: [tool.before, tool.after]
  agents: ["support-*", "ops"]
  kinds: ["file.*"]
  tools: [Edit]
validations:
- expression: 'true'
  action: warn
`)
	regs := c.Registrations()
	if len(regs) != 2 {
		t.Fatalf("registrations = %+v", regs)
	}
	for _, r := range regs {
		if r.Plugin != "policy-multi" || r.Order != -5 || r.Policy != interceptors.PolicyIgnore || r.Agents != "support-*|ops" ||
			r.Kinds != "file.*" || r.Tools != "Edit" || !r.Builtin || r.Mode != "" {
			t.Errorf("registration = %+v", r)
		}
		if err := r.Validate(); err != nil {
			t.Error(err)
		}
	}
}

// The interceptor answers within its ctx: a cancelled ctx is an error.
func TestInterceptorContext(t *testing.T) {
	c := compile(t, `
name: slow
validations:
- expression: 'action.paths.all(p, p.size() < 10)'
`)
	ic := c.Interceptor()
	if _, ok := ic.(interface{ BoundByContext() }); !ok {
		t.Fatal("the interceptor does not promise to be bound by its ctx")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ev := toolBefore(t, events.HarnessClaude, "a", "s1", "Read", `{"file_path":"x"}`)
	_, err := ic.Intercept(ctx, &interceptors.Request{Stage: ev.Stage, Event: ev})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// A policy in warn mode whose expression fails lets the call through with
// the failure as a warning, whatever its failure policy.
func TestWarnModeFailure(t *testing.T) {
	c := compile(t, strings.Replace(fmt.Sprintf(failing, "fail"), "name: needs-key\n", "name: needs-key\nmode: warn\n", 1))
	out, err := chainFor(t, c).Run(context.Background(), toolBefore(t, events.HarnessClaude, "a", "s1", "Bash", `{"command":"ls"}`))
	if err != nil {
		t.Fatal(err)
	}
	rec := out.Records[0]
	if out.Decision != interceptors.Allow || rec.Failure != nil || len(rec.Warnings) != 1 || !strings.Contains(rec.Warnings[0], "no such key: mode") {
		t.Errorf("decision %s, record %+v", out.Decision, rec)
	}
}

// One compiled policy decides for many goroutines at once, sharing its
// history.
func TestConcurrentEvaluate(t *testing.T) {
	mem := policy.NewMemory()
	c := compile(t, `
name: limit
match:
  kinds: [shell]
counters:
- name: n
  key: agent
  window: 1h
validations:
- expression: counters.n < 1000.0 && !session.seen("file.read", "\\.env$")
`, policy.WithHistory(mem))
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := range 100 {
				ev := toolBefore(t, events.HarnessHookbus, "a", fmt.Sprintf("s%d", g), "Bash", `{"command":"ls"}`)
				mem.Record(ev)
				in, _ := policy.InputFrom(ev, "")
				res, err := c.Evaluate(context.Background(), in)
				if err == nil && res.Decision.Kind != interceptors.Allow {
					err = fmt.Errorf("call %d: %s", i, res.Decision.Kind)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	k := policy.CounterKey{Policy: "limit", Counter: "n", Key: "a", Window: time.Hour}
	if n, _ := mem.Counter(context.Background(), k); n != 400 {
		t.Errorf("counted %v, want 400", n)
	}
}

// A regular expression decides the same whether the input is within the
// estimate's bounds (no cost tracking) or not (tracked), in both forms of
// matches.
func TestMatchesTrackedAndNot(t *testing.T) {
	c := compile(t, `
name: rm
validations:
- expression: '!action.command.matches("rm\\s+-rf") && !matches(action.command, "mkfs")'
`)
	long := strings.Repeat("echo x; ", 3000) // over 16 KiB: tracked
	for _, cmd := range []string{"ls", "rm -rf /", "mkfs /dev/sda", long + "ls", long + "rm -rf /", long + "mkfs"} {
		want := interceptors.Deny
		if strings.HasSuffix(cmd, "ls") {
			want = interceptors.Allow
		}
		q, _ := json.Marshal(cmd)
		res := evaluate(t, c, toolBefore(t, events.HarnessHookbus, "a", "s1", "Bash", `{"command":`+string(q)+`}`))
		if res.Decision.Kind != want {
			t.Errorf("%.20q (%d bytes): %s, want %s", cmd, len(cmd), res.Decision.Kind, want)
		}
	}
}

// TestCompileConcurrently: policies compiled and evaluated at once (the
// environment they extend is shared) each decide on their own rules.
func TestCompileConcurrently(t *testing.T) {
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			src := fmt.Sprintf("name: p%d\nvariables:\n- name: cmd\n  expression: action.command\nvalidations:\n- expression: '!variables.cmd.contains(\"x%d\")'\n", i, i)
			ps, err := policy.Parse("p.yaml", []byte(src))
			if err != nil {
				errs <- err
				return
			}
			c, err := policy.Compile(ps[0])
			if err != nil {
				errs <- err
				return
			}
			for j := range 8 {
				in, err := policy.InputFrom(toolBefore(t, events.HarnessHookbus, "a", "s", "Bash", fmt.Sprintf(`{"command":"echo x%d"}`, j)), "")
				if err != nil {
					errs <- err
					return
				}
				res, err := c.Evaluate(context.Background(), in)
				if err != nil {
					errs <- err
					return
				}
				if want := map[bool]string{true: "deny", false: "allow"}[i == j]; res.Decision.Kind != interceptors.Kind(want) {
					errs <- fmt.Errorf("policy %d on x%d: %s, want %s", i, j, res.Decision.Kind, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
