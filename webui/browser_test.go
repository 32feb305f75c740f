package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/webui"
)

// These tests drive the page in a headless Chromium (Debian's chromium
// package; .ci/run installs it). The browser is $CHROME_PATH, else the
// first of chromedp's usual names on PATH; with none the tests are skipped.
// Screenshots go to $HOOKBUS_ARTIFACTS (else a temporary directory named in
// the log).

// browserNames are the executables looked up on PATH, chromedp's order.
var browserNames = []string{"headless_shell", "headless-shell", "chromium", "chromium-browser", "google-chrome",
	"google-chrome-stable", "google-chrome-beta", "google-chrome-unstable", "/usr/bin/google-chrome"}

func findBrowser() string {
	if p := os.Getenv("CHROME_PATH"); p != "" {
		return p
	}
	for _, n := range browserNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// browser is a tab of a headless browser, its uncaught exceptions fail
// the test at the end.
type browser struct {
	t         *testing.T
	ctx       context.Context
	artifacts string
	mu        sync.Mutex
	errors    []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := findBrowser()
	if path == "" {
		t.Skip("no Chromium or Chrome found (set CHROME_PATH, or install Debian's chromium package: apt-get install -y chromium); the browser tests are skipped")
	}
	dir := os.Getenv("HOOKBUS_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, "webui")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1360, 900))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses its sandbox to root
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	b := &browser{t: t, ctx: ctx, artifacts: dir}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1360, 900)); err != nil {
		cancelTime()
		cancelTab()
		cancelAlloc()
		t.Fatalf("start the browser %s: %v", path, err)
	}
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" && m.Source == "" { // not the browser's own log of a 404 the page reports
				b.mu.Lock()
				b.errors = append(b.errors, m.String())
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		b.mu.Lock()
		errs := slices.Clone(b.errors)
		b.mu.Unlock()
		cancelTime()
		cancelTab()
		cancelAlloc()
		if len(errs) > 0 {
			t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
		}
	})
	t.Logf("browser %s; screenshots in %s", path, dir)
	return b
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// wait polls a JavaScript condition until it holds.
func (b *browser) wait(what, cond string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(45*time.Second))); err != nil {
		b.t.Fatalf("waiting for %s (%s): %v", what, cond, err)
	}
}

func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// shot saves a full-page screenshot as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(b.artifacts, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", p)
}

// A finished run: listed, opened, its events in stream order with the
// child run nested, a decision's diff opened; then the plugins' stats.
func TestBrowserFinishedRun(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	kp, pub := signer(t)
	res := recordSignedRun(t, ctx, b, "billing-7", kp)
	hs := serveTrusting(t, b, false, map[string]bool{pub: true})
	br := newBrowser(t)

	br.do("open the runs", chromedp.Navigate(hs.URL+"/#/runs"), chromedp.WaitVisible(chromedp.CSS(`tr[data-run="`+res.RunID+`"]`)))
	if got := eval[string](br, `document.getElementById("mode").textContent`); got != "read-only" {
		t.Fatalf("mode %q, want read-only", got)
	}
	br.shot("runs")

	br.do("open the run", chromedp.Click(chromedp.CSS(`tr[data-run="`+res.RunID+`"] td.prompt a`)), chromedp.WaitVisible(chromedp.CSS(".timeline")))
	got := eval[[]string](br, `[...document.querySelectorAll(".timeline > ol.events > li[data-stage]")].map(e => e.dataset.stage)`)
	if want := stagesOf(t, ctx, b, res.RunID); !slices.Equal(got, want) {
		t.Fatalf("the page shows the run's events\n%v\nthe stream holds\n%v", got, want)
	}
	if n := eval[int](br, `document.querySelectorAll(".timeline li.child li[data-stage]").length`); n == 0 {
		t.Fatal("the helper's child run is not nested in the timeline")
	}
	if s := eval[string](br, `document.querySelector(".run-head .pill").textContent`); s != "done" {
		t.Fatalf("status %q", s)
	}
	if s := eval[string](br, `document.querySelector(".run-head .verify.ok").textContent`); s != "✓ record intact, signed by "+pub {
		t.Fatalf("the verification badge says %q", s)
	}
	deny := eval[string](br, `document.querySelector('.timeline > ol.events > li[data-decision="deny"]').textContent`)
	if !strings.Contains(deny, "guard") || !strings.Contains(deny, "rm -rf is not allowed on this host") {
		t.Fatalf("the deny row says %q", deny)
	}

	br.do("open the sandbox's change", chromedp.Click(chromedp.CSS(`.timeline > ol.events > li[data-decision="modify"] .diff-toggle`)),
		chromedp.WaitVisible(chromedp.CSS(`li[data-decision="modify"] .diff`)))
	added := eval[[]string](br, `[...document.querySelectorAll('li[data-decision="modify"] .diff .dl.add')].map(e => e.textContent.replace(/\s+/g, " ").trim())`)
	removed := eval[[]string](br, `[...document.querySelectorAll('li[data-decision="modify"] .diff .dl.del')].map(e => e.textContent.replace(/\s+/g, " ").trim())`)
	if !slices.Equal(removed, []string{`- "expression": "6*7.5"`}) || !slices.Equal(added, []string{`+ "expression": "6*7"`}) {
		t.Fatalf("the diff shows - %q + %q", removed, added)
	}
	br.do("open a payload", chromedp.Click(chromedp.CSS(`.timeline > ol.events > li[data-stage="run.completed"] button.summary`)),
		chromedp.WaitVisible(chromedp.CSS(`li[data-stage="run.completed"] pre.payload`)))
	br.shot("run")

	br.do("open the plugins", chromedp.Navigate(hs.URL+"/#/plugins"), chromedp.WaitVisible(chromedp.CSS(`tr[data-plugin="guard"]`)))
	plugins := eval[[]string](br, `[...document.querySelectorAll("tr[data-plugin]")].map(e => e.dataset.plugin)`)
	if !slices.Equal(plugins, []string{"audit-log", "guard", "sandbox"}) {
		t.Fatalf("plugins %v", plugins)
	}
	br.shot("plugins")

	br.do("filter the runs", chromedp.Navigate(hs.URL+"/#/runs?q=no-such-thing"), chromedp.WaitVisible(chromedp.CSS(".empty")))
	if s := eval[string](br, `document.querySelector(".empty").textContent`); !strings.Contains(s, "No run matches these filters") {
		t.Fatalf("empty state %q", s)
	}
}

// An empty bus: every page says what to do.
func TestBrowserEmpty(t *testing.T) {
	b := bustest.StartBus(t)
	hs := serve(t, b, false)
	br := newBrowser(t)
	for _, p := range []struct{ hash, says string }{
		{"#/runs", "No runs recorded"},
		{"#/approvals", "No tool call is waiting for a human"},
		{"#/plugins", "No interceptor has decided anything"},
		{"#/run/01JNOSUCHRUN0000000000000", "no event of run 01JNOSUCHRUN0000000000000"},
	} {
		br.do("open "+p.hash, chromedp.Navigate(hs.URL+"/"+p.hash))
		says, _ := json.Marshal(p.says)
		br.wait(p.hash+" to say "+p.says, `document.getElementById("main").textContent.includes(`+string(says)+`)`)
	}
	br.do("open the runs", chromedp.Navigate(hs.URL+"/#/runs"), chromedp.WaitVisible(chromedp.CSS(".empty")))
	br.shot("empty")
	br.do("open a missing run", chromedp.Navigate(hs.URL+"/#/run/01JNOSUCHRUN0000000000000"), chromedp.WaitVisible(chromedp.CSS(".error")))
	br.shot("error")
}

// A run's page says whether its record verifies: intact but unsigned, or,
// in red, what was done to it.
func TestBrowserVerification(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	kp, pub := signer(t)
	unsigned := recordRun(t, ctx, b, "unsigned")
	tampered := recordSignedRun(t, ctx, b, "tampered", kp)
	seq := removeEvent(t, ctx, b, tampered.RunID, events.StageStepCompleted)
	hs := serveTrusting(t, b, false, map[string]bool{pub: true})
	br := newBrowser(t)

	br.do("open the unsigned run", chromedp.Navigate(hs.URL+"/#/run/"+unsigned.RunID+"?agent=planner&session=unsigned"), chromedp.WaitVisible(chromedp.CSS(".run-head .verify")))
	if s := eval[string](br, `document.querySelector(".run-head .verify.plain").textContent`); s != "✓ record intact, unsigned" {
		t.Fatalf("the unsigned run's badge says %q", s)
	}
	br.do("open the tampered run", chromedp.Navigate(hs.URL+"/#/run/"+tampered.RunID+"?agent=planner&session=tampered"), chromedp.WaitVisible(chromedp.CSS(".run-head .verify.bad")))
	items := eval[[]string](br, `[...document.querySelectorAll(".run-head .verify.bad li")].map(e => e.textContent)`)
	if !slices.ContainsFunc(items, func(s string) bool {
		return strings.HasPrefix(s, fmt.Sprintf("removed at seq %d: seq %d is missing", seq, seq))
	}) {
		t.Fatalf("the tampered run's badge lists %q; want seq %d removed", items, seq)
	}
	if c := eval[string](br, `getComputedStyle(document.querySelector(".run-head .verify.bad")).color`); c == "rgb(0, 0, 0)" {
		t.Fatalf("the problems are drawn in %s, not red", c)
	}
	br.shot("run-tampered")

	// The page follows observer verify's rule: signed by a key not given
	// to it, intact; unsigned when signatures are required, not.
	untrusting := serve(t, b, false)
	signed := recordSignedRun(t, ctx, b, "signed", kp)
	br.do("open an intact signed run, no key given", chromedp.Navigate(untrusting.URL+"/#/run/"+signed.RunID+"?agent=planner&session=signed"), chromedp.WaitVisible(chromedp.CSS(".run-head .verify.plain")))
	if s := eval[string](br, `document.querySelector(".run-head .verify.plain").textContent`); s != "✓ record intact, signed by "+pub+" (a key not given to this page)" {
		t.Fatalf("the signed run's badge, no key given, says %q", s)
	}
	srv, err := webui.New(webui.Config{Bus: b, RequireSigned: true})
	if err != nil {
		t.Fatal(err)
	}
	requiring := httptest.NewServer(srv)
	t.Cleanup(requiring.Close)
	br.do("open the unsigned run, signatures required", chromedp.Navigate(requiring.URL+"/#/run/"+unsigned.RunID+"?agent=planner&session=unsigned"), chromedp.WaitVisible(chromedp.CSS(".run-head .verify.bad")))
	items = eval[[]string](br, `[...document.querySelectorAll(".run-head .verify.bad li")].map(e => e.textContent)`)
	if len(items) != 1 || !strings.HasPrefix(items[0], "unsigned") {
		t.Fatalf("the unsigned run's badge, signatures required, lists %q", items)
	}
}

// A live run: the page shows the events stored so far, then the rest as
// they come, without reloading.
func TestBrowserLiveRun(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	hs := serve(t, b, false)
	br := newBrowser(t)
	release := make(chan struct{})
	deploy := loop.ToolFunc(events.ToolSpec{Name: "deploy"}, func(ctx context.Context, _ json.RawMessage) (string, error) {
		select {
		case <-release:
			return "deployed v42 to staging", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	eng, err := loop.New(loop.Config{Emitter: b, History: b, Hooks: policy(t), Tools: []loop.Tool{deploy, clock()}, Model: scripted.New(&scripted.Script{Replies: []scripted.Reply{
		{Content: "Checking the time, then deploying.", ToolCalls: []scripted.ToolCall{{Name: "clock", Arguments: json.RawMessage(`{}`)}, {Name: "deploy", Arguments: json.RawMessage(`{"env":"staging","version":"v42"}`)}}},
		{Content: "Done: {{tool:deploy}}"}}})})
	if err != nil {
		t.Fatal(err)
	}
	run := events.NewID()
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, runErr = eng.Run(ctx, &events.RunRequest{RunID: run, AgentID: "deployer", SessionID: "release-42", Prompt: "Deploy v42 to staging"})
	}()
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
		<-done
	})
	bustest.Eventuallyf(t, 30*time.Second, func() bool {
		n := 0
		for _, s := range stagesOf(t, ctx, b, run) {
			if s == string(events.StageToolBefore) {
				n++
			}
		}
		return n == 2 // the clock ran; deploy waits
	}, "the deploy call to start")

	br.do("open the running run", chromedp.Navigate(hs.URL+"/#/run/"+run+"?agent=deployer&session=release-42"), chromedp.WaitVisible(chromedp.CSS(".timeline")))
	br.wait("the live stream", `document.body.dataset.live === "on"`)
	if s := eval[string](br, `document.querySelector(".run-head .pill").textContent`); s != "running" {
		t.Fatalf("status %q, want running", s)
	}
	before := eval[int](br, `document.querySelectorAll(".timeline li[data-stage]").length`)
	if eval[int](br, `document.querySelectorAll('.timeline li[data-stage="run.completed"]').length`) != 0 {
		t.Fatal("the run shows completed before it is")
	}
	br.shot("live")
	eval[bool](br, `window.__samePage = true`)

	close(release)
	br.wait("run.completed to arrive", `document.querySelectorAll('.timeline li[data-stage="run.completed"]').length === 1`)
	br.wait("the status to say done", `document.querySelector(".run-head .pill").textContent === "done"`)
	if !eval[bool](br, `window.__samePage === true`) {
		t.Fatal("the page reloaded; the events should arrive live")
	}
	<-done
	if runErr != nil {
		t.Fatal(runErr)
	}
	got := eval[[]string](br, `[...document.querySelectorAll(".timeline > ol.events > li[data-stage]")].map(e => e.dataset.stage)`)
	if want := stagesOf(t, ctx, b, run); !slices.Equal(got, want) || len(got) <= before {
		t.Fatalf("after the live updates the page shows (%d before)\n%v\nthe stream holds\n%v", before, got, want)
	}
	br.shot("live-done")
}

// A pending approval: read-only pages show no buttons; with approvals
// allowed, alice signs in with her token, Approve records the answer
// under her name (a worker on the same bus resumes the run) and the run
// finishes.
func TestBrowserApproval(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	startWorker(t, b)
	tokens, err := httpauth.ParseTokens(strings.NewReader(aliceToken+" alice\n"), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	ro := serve(t, b, false)
	rw := serveGuarded(t, webui.Config{Bus: b, AllowApprovals: true}, httpauth.Config{Tokens: tokens})
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "ops", SessionID: "s1", Prompt: "What is 6*7?"}
	if err := runs.New(b).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitStage(t, ctx, b, req.RunID, events.StageApprovalRequested)
	br := newBrowser(t)

	br.do("open the approvals read-only", chromedp.Navigate(ro.URL+"/#/approvals"), chromedp.WaitVisible(chromedp.CSS(`.approval[data-run="`+req.RunID+`"]`)))
	if n := eval[int](br, `document.querySelectorAll(".approval button").length`); n != 0 {
		t.Fatalf("a read-only page shows %d buttons", n)
	}
	br.shot("approvals-readonly")

	br.do("open the page signed out", chromedp.Navigate(rw.URL+"/#/approvals"), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	br.shot("login")
	br.do("sign in with a wrong token", chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), "not-alice-0123456789"), chromedp.Submit(chromedp.CSS(`form`)),
		chromedp.WaitVisible(chromedp.CSS(`p.bad`)))
	br.do("sign in", chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), aliceToken), chromedp.Submit(chromedp.CSS(`form`)),
		chromedp.WaitVisible(chromedp.CSS(`#user`)))
	br.do("open the approvals", chromedp.Navigate(rw.URL+"/#/approvals"), chromedp.WaitVisible(chromedp.CSS(`.approval[data-run="`+req.RunID+`"] button.approve`)))
	br.wait("the page to say who answers", `document.getElementById("user").textContent.startsWith("alice")`)
	if n := eval[int](br, `document.querySelectorAll('.approval input[name="by"]').length`); n != 0 {
		t.Fatalf("the page asks who answers in %d field(s): the signed-in identity is recorded", n)
	}
	br.wait("the pending count", `document.getElementById("pending-count").textContent === "1"`)
	buttons := eval[[]string](br, `[...document.querySelectorAll(".approval button")].map(b => b.textContent)`)
	if !slices.Equal(buttons, []string{"Approve", "Reject and continue", "Reject"}) {
		t.Fatalf("buttons %v", buttons)
	}
	br.do("add a note", chromedp.SendKeys(chromedp.CSS(`.approval input[name="comment"]`), "checked the sum"))
	br.shot("approvals")
	br.do("approve", chromedp.Click(chromedp.CSS(`.approval button.approve`)))
	br.wait("the answer to be recorded", `(document.querySelector(".answer-out.ok") || {}).textContent === "approve recorded for 1 call(s)" || !!document.querySelector(".empty")`)
	waitStage(t, ctx, b, req.RunID, events.StageRunCompleted)

	br.do("open the run", chromedp.Navigate(rw.URL+"/#/run/"+req.RunID+"?agent=ops&session=s1"), chromedp.WaitVisible(chromedp.CSS(".timeline")))
	br.wait("the run to show done", `document.querySelector(".run-head .pill").textContent === "done"`)
	resolved := eval[string](br, `document.querySelector('.timeline li[data-stage="approval.resolved"]').textContent`)
	// Who answered is the signed-in user, vouched for by the page's NATS
	// user (anonymous on the embedded server).
	if !strings.Contains(resolved, "approve by alice (web, vouched for by NATS user anonymous)") {
		t.Fatalf("approval.resolved row %q does not say who answered", resolved)
	}
	br.shot("approved-run")
	br.do("sign out", chromedp.Click(chromedp.CSS(`.signout button`)), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	br.do("the page again", chromedp.Navigate(rw.URL+"/#/approvals"), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
}
