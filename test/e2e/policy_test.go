package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookbus/hookbus/audit/policytest"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/events"
)

// policyMessage is the message of the policy's rm-rf rule: what every
// agent's model is told when the policy denies its rm -rf.
const policyMessage = "hookbus policy: no recursive forced delete in this project"

// noRmRf is the policy every agent runs under: one rule on the shell kind,
// whatever the harness names its shell tool.
const noRmRf = `name: no-rm-rf
match:
  kinds: [shell]
validations:
- name: rm-rf
  expression: '!action.command.contains("rm -rf")'
  message: "` + policyMessage + `"
  reason: Destructive
`

// noRmRfNoTouch is the policy's next version: it also denies touch, which
// every session ran, and was let through.
const noRmRfNoTouch = noRmRf + `- name: touch
  expression: '!action.command.startsWith("touch ")'
  message: no touch in this project
`

// policyPrompt is the prompt of every agent's session.
const policyPrompt = "Tidy up: remove the victim directory."

// policySession is one agent's session under the policy.
type policySession struct {
	agent, harness string
	project        string
	// ran is the file the allowed call created.
	ran     string
	session string
	// told reports whether a request to the model carried text; bodies
	// are the requests, for a failure's message.
	told   func(text string) bool
	bodies func() string
}

// policyTurns is the fake model's script for a CLI whose shell tool call
// tool renders: it touches tidy.marker, then, seeing that call, removes
// victim; told the policy's message, it answers.
func policyTurns(tool func(string) string) string {
	return "turns:\n" +
		"  - when: \"" + policyMessage + "\"\n    reply: The policy refused, so I left victim alone.\n" +
		"  - when: tidy.marker\n    reply: Now removing it.\n    tool: " + tool("rm -rf victim") + "\n" +
		"  - reply: A marker first.\n    tool: " + tool("touch tidy.marker") + "\n" +
		"  - reply: Done.\n  - reply: Done.\n  - reply: Done.\n"
}

// One policy file, applied with observer policy apply, holds for every
// agent on the bus with no interceptor of its own: hookbus' own agent
// (loop run), Claude Code, Gemini CLI, Codex CLI, Copilot CLI, Qwen Code,
// Factory Droid and Cline (their hooks to loop agent-hook, as
// docs/CLAUDE_CODE.md and docs/CODING_AGENTS.md write them), OpenCode and
// Kilo Code (hookbus' plugin to loop gateway). In each the model runs touch
// tidy.marker (allowed), then rm -rf victim: the policy denies it, the
// directory survives, the model is told the policy's message, and
// hook.decided records the policy's name, version and rule. Then observer
// policy test replays their recorded sessions: the policy as applied
// changes nothing; its next version, which also denies touch, flips
// exactly the touch of each session, named by run and call, per agent and
// harness.
//
// OpenCode and Kilo Code start slowly: they run here only, once each, and
// also check the rewriting guard (touch original.txt runs as touch
// rewritten.txt). The CLIs run at once, each in its own HOME, a few at a
// time.
func TestPolicyEveryAgent(t *testing.T) {
	bin := binaries(t)
	url, b := startKindBus(t)
	dir := t.TempDir()
	file, next := filepath.Join(dir, "no-rm-rf.yaml"), filepath.Join(dir, "no-rm-rf-next.yaml")
	writeFile(t, file, noRmRf)
	writeFile(t, next, noRmRfNoTouch)
	code, stdout, stderr := run(t, bin, "observer", "", "policy", "apply", "-f", file, "--nats", url)
	f := strings.Fields(stdout)
	if code != 0 || len(f) < 4 || f[0] != "no-rm-rf" || f[3] != "applied" {
		t.Fatalf("observer policy apply: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	version := f[1]

	var mu sync.Mutex
	var sessions []*policySession
	done := func(s *policySession) {
		mu.Lock()
		defer mu.Unlock()
		sessions = append(sessions, s)
	}
	slots := make(chan struct{}, 4)
	take := func() func() { slots <- struct{}{}; return func() { <-slots } }
	t.Run("agents", func(t *testing.T) {
		// The slowest first.
		for _, c := range []pluginCLI{opencodeCLI, kiloCLI} {
			t.Run(c.name, func(t *testing.T) {
				if _, err := exec.LookPath(c.bin); err != nil {
					t.Skipf("%s (%s) is not on PATH: \"make e2e\" installs it from npm and runs these tests with it", c.bin, c.pkg)
				}
				t.Parallel()
				defer take()()
				r := runPlugin(t, c, url, policyMessage)
				s := &policySession{agent: c.agent, harness: c.name, project: r.project, ran: "rewritten.txt", session: r.session, told: r.fake.saw, bodies: r.fake.bodies}
				checkPolicyDenied(t, b, url, s, version)
				done(s)
			})
		}
		for _, r := range []*recipe{claudeRecipe, geminiRecipe, codexRecipe, copilotRecipe, qwenRecipe, factoryRecipe, clineRecipe} {
			t.Run(r.name, func(t *testing.T) {
				if _, err := exec.LookPath(r.bin); err != nil {
					t.Skipf("%s (%s) is not on PATH: \"make e2e\" installs it from npm and runs these tests with it", r.bin, r.pkg)
				}
				t.Parallel()
				defer take()()
				project, session, fake := runRecipeScript(t, r, url, policyPrompt, policyTurns(r.tool))
				s := &policySession{agent: r.agent, harness: r.name, project: project, ran: "tidy.marker", session: session}
				s.recorded(t, fake)
				checkPolicyDenied(t, b, url, s, version)
				done(s)
			})
		}
		t.Run("hookbus", func(t *testing.T) {
			t.Parallel()
			defer take()()
			s := runLoopAgent(t, url)
			checkPolicyDenied(t, b, url, s, version)
			done(s)
		})
	})
	if t.Failed() || len(sessions) == 0 {
		return
	}

	// The touch of each session: the calls the next version flips.
	var want []string
	for _, s := range sessions {
		evs, err := b.SessionEvents(context.Background(), s.agent, s.session)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Stage != events.StageToolBefore {
				continue
			}
			p, err := events.Data[events.ToolBefore](e)
			if err != nil {
				t.Fatal(err)
			}
			if a := p.Call.Action; a != nil && strings.HasPrefix(a.Command, "touch ") {
				want = append(want, s.agent+" "+s.harness+" "+e.RunID+" "+p.Call.ID)
			}
		}
	}
	slices.Sort(want)
	if len(want) != len(sessions) {
		t.Fatalf("%d sessions recorded %d touch calls:\n%s", len(sessions), len(want), strings.Join(want, "\n"))
	}

	// The policy as applied: no call would change.
	rep := policyTest(t, bin, url, file)
	p := rep.Policies[0]
	if rep.Flips() != 0 || p.Matched < 2*len(sessions) {
		t.Fatalf("the applied policy, tested: %d flips, %d of %d calls matched (want 0 flips, at least %d matched)", rep.Flips(), p.Matched, p.Calls, 2*len(sessions))
	}

	// Its next version: exactly the touches, newly denied by rule touch.
	rep = policyTest(t, bin, url, next)
	var got []string
	for _, f := range rep.Policies[0].Flips {
		if f.Kind != policytest.FlipDenied || f.Rule != "touch" || f.Decision != "deny" {
			t.Errorf("flip %+v: want denied by rule touch", f)
		}
		got = append(got, f.Agent+" "+f.Harness+" "+f.Run+" "+f.CallID)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the next version flips (agent harness run call)\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	t.Logf("the next version flips:\n%s", strings.Join(got, "\n"))
}

// checkPolicyDenied checks one session under the policy: the touch ran,
// the rm -rf did not, the model was told the policy's message, the
// session's hook.decided names the policy, its version and rule, and
// observer replay shows the session under the CLI's own session id.
func checkPolicyDenied(t *testing.T, b *bus.Bus, natsURL string, s *policySession, version string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(s.project, "victim", "keep.txt")); err != nil {
		t.Fatalf("the rm -rf ran: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.project, s.ran)); err != nil {
		t.Fatalf("the allowed call did not run: %v", err)
	}
	if !s.told(policyMessage) {
		t.Fatalf("no request to the model carries the policy's message %q:\n%s", policyMessage, s.bodies())
	}
	evs, err := b.SessionEvents(context.Background(), s.agent, s.session)
	if err != nil {
		t.Fatal(err)
	}
	var decided []string
	for _, e := range evs {
		if e.Stage != events.StageHookDecided {
			continue
		}
		d, err := events.Data[events.HookDecided](e)
		if err != nil {
			t.Fatal(err)
		}
		if h := d.Policy; h != nil && d.Decision == "deny" {
			decided = append(decided, h.Name+" "+h.Version+" "+h.Rule+" "+h.Mode+" "+h.Action)
			if !strings.Contains(d.Reason, policyMessage) {
				t.Errorf("the policy's deny says %q", d.Reason)
			}
		}
	}
	if want := []string{"no-rm-rf " + version + " rm-rf enforce deny"}; !slices.Equal(decided, want) {
		t.Fatalf("session %s/%s: the policy's denials %q, want %q", s.agent, s.session, decided, want)
	}
	replay := (&harness{agent: s.agent}).replay(t, natsURL, s.session)
	for _, want := range []string{"run.started", "tool.before", "hook.decided", policyMessage} {
		if !strings.Contains(replay, want) {
			t.Fatalf("observer replay of session %s lacks %q:\n%s", s.session, want, replay)
		}
	}
}

// runLoopAgent runs hookbus' own agent (loop run, Bash allowed, in a
// project with a victim directory) on the bus at natsURL against a loop
// fake-model as its OpenAI API.
func runLoopAgent(t *testing.T, natsURL string) *policySession {
	t.Helper()
	fake := startFakeModel(t, policyTurns(func(c string) string {
		return "{name: Bash, arguments: {command: " + c + "}}"
	}))
	project := t.TempDir()
	writeFile(t, filepath.Join(project, "victim", "keep.txt"), "keep me\n")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const agent = "e2e-hookbus"
	cmd := exec.CommandContext(ctx, filepath.Join(binaries(t), "loop"), "run", "--nats", natsURL, "--agent", agent,
		"--model", "openai:fake-model", "--tools", "Bash", "--root", project, policyPrompt)
	cmd.Dir = project
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + fake.url + "/v1", "OPENAI_API_KEY=fake"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("loop run: %v\nstdout %s\nstderr %s\nfake model:\n%s", err, stdout.String(), stderr.String(), fake.log)
	}
	var session string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[0] == "run" && f[2] == "session" {
			session = f[3]
		}
	}
	if session == "" {
		t.Fatalf("loop run names no session:\nstderr %s", stderr.String())
	}
	s := &policySession{agent: agent, harness: "hookbus", project: project, ran: "tidy.marker", session: session}
	s.recorded(t, fake)
	return s
}

// recorded reads what the model was told from a loop fake-model's record.
func (s *policySession) recorded(t *testing.T, fake *fakeModel) {
	s.told = func(text string) bool {
		return slices.ContainsFunc(fake.requests(t), func(body string) bool { return strings.Contains(body, text) })
	}
	s.bodies = func() string { return strings.Join(fake.requests(t), "\n") }
}

// policyTest is observer policy test -f file over all the bus holds, as
// JSON.
func policyTest(t *testing.T, bin, natsURL, file string) *policytest.Report {
	t.Helper()
	code, stdout, stderr := run(t, bin, "observer", "", "policy", "test", "-f", file, "--since", "0", "--no-store", "-o", "json", "--nats", natsURL)
	if code != 0 {
		t.Fatalf("observer policy test -f %s: exit %d\nstdout %s\nstderr %s", file, code, stdout, stderr)
	}
	var rep policytest.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Policies) != 1 {
		t.Fatalf("observer policy test -f %s: %v\n%s", file, err, stdout)
	}
	return &rep
}
