package webui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/remote"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/interceptors"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/webui"
)

// pageData reads the first view GET url inlines in the page.
func pageData(t *testing.T, url string, wantCode int) (webui.PageData, json.RawMessage, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != wantCode {
		t.Fatalf("GET %s: %d, want %d", url, res.StatusCode, wantCode)
	}
	const open = `<script type="application/json" id="page-data">`
	_, rest, ok := bytes.Cut(body, []byte(open))
	if !ok {
		t.Fatalf("GET %s: no %s in the page:\n%s", url, open, body)
	}
	raw, _, ok := bytes.Cut(rest, []byte("</script>"))
	if !ok {
		t.Fatalf("GET %s: the page data is not closed", url)
	}
	var d webui.PageData
	var data struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("GET %s: page data: %v", url, err)
	}
	_ = json.Unmarshal(raw, &data)
	return d, data.Data, string(body)
}

// The page's first view comes inlined in its HTML: the runs list, a run's
// timeline, the approvals and the plugins, each at its own URL, and the
// error of a run that is not there; the data cannot end its script
// element.
func TestPageInlinesFirstView(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	res := recordRun(t, ctx, b, "s1")
	hs := serve(t, b, false)

	d, raw, _ := pageData(t, hs.URL+"/", 200)
	var list webui.RunsView
	if err := json.Unmarshal(raw, &list); err != nil || d.View != webui.ViewRuns || len(list.Runs) != 2 {
		t.Fatalf("GET /: view %q, %d runs (%v); want the planner's and the helper's", d.View, len(list.Runs), err)
	}
	if d.Config.Where != "embedded test server" {
		t.Fatalf("GET /: config %+v", d.Config)
	}

	d, raw, page := pageData(t, hs.URL+"/?run="+res.RunID+"&agent=planner&session=s1", 200)
	var run webui.RunView
	if err := json.Unmarshal(raw, &run); err != nil || d.View != webui.ViewRun || run.Run == nil || run.Run.RunID != res.RunID || len(run.Entries) == 0 {
		t.Fatalf("GET /?run=: view %q, %+v (%v)", d.View, run.Run, err)
	}
	if strings.Contains(page, "rm -rf /var/data</") || strings.Count(page, "</script>") != 2 {
		t.Fatalf("the inlined data can end its script element:\n%s", page)
	}

	d, raw, _ = pageData(t, hs.URL+"/?view=plugins", 200)
	var stats webui.StatsView
	if err := json.Unmarshal(raw, &stats); err != nil || d.View != webui.ViewPlugins || len(stats.Plugins) != 3 {
		t.Fatalf("GET /?view=plugins: view %q, %+v (%v)", d.View, stats, err)
	}
	d, raw, _ = pageData(t, hs.URL+"/?view=approvals", 200)
	var aps webui.ApprovalsView
	if err := json.Unmarshal(raw, &aps); err != nil || d.View != webui.ViewApprovals || aps.Approvals == nil {
		t.Fatalf("GET /?view=approvals: view %q, %+v (%v)", d.View, aps, err)
	}
	d, _, _ = pageData(t, hs.URL+"/?run=01JNOSUCHRUN0000000000000", 404)
	if d.View != webui.ViewRun || !strings.Contains(d.Error, "no event of run 01JNOSUCHRUN0000000000000") {
		t.Fatalf("GET /?run=missing: %+v", d)
	}
	d, _, _ = pageData(t, hs.URL+"/?run=bad*id", 400)
	if d.Error == "" {
		t.Fatalf("GET /?run=bad*id: no error in %+v", d)
	}
}

// A plain headless Chromium, with no script of a test's, shows a run's
// timeline and the runs list, not "Loading…": what a screenshot taken with
// chromium --headless --screenshot, or a reader on a slow connection, sees.
func TestPlainChromiumShowsContent(t *testing.T) {
	path := findBrowser()
	if path == "" {
		t.Skip("no Chromium or Chrome found (set CHROME_PATH, or apt-get install -y chromium)")
	}
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	res := recordRun(t, ctx, b, "s1")
	hs := serve(t, b, false)
	dir := os.Getenv("HOOKBUS_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, "webui-plain")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, query, says string }{
		{"runs", "/", "What time is it, and what is 6*7?"},
		{"run", "/?run=" + res.RunID + "&agent=planner&session=s1", "rm -rf is not allowed on this host"},
		{"plugins", "/?view=plugins", "sandbox"},
		{"approvals", "/?view=approvals", "No tool call is waiting for a human"},
	} {
		args := []string{"--headless", "--disable-gpu", "--hide-scrollbars", "--window-size=1360,900", "--user-data-dir=" + t.TempDir()}
		if os.Geteuid() == 0 {
			args = append(args, "--no-sandbox")
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		dom, err := exec.CommandContext(cctx, path, append(args, "--dump-dom", hs.URL+p.query)...).Output()
		cancel()
		if err != nil {
			t.Fatalf("%s --dump-dom %s: %v", path, p.query, err)
		}
		if strings.Contains(string(dom), "Loading…") || !strings.Contains(string(dom), p.says) {
			t.Fatalf("a plain Chromium shows %s without %q:\n%s", p.query, p.says, dom)
		}
		png := filepath.Join(dir, p.name+".png")
		cctx, cancel = context.WithTimeout(ctx, time.Minute)
		out, err := exec.CommandContext(cctx, path, append(args, "--screenshot="+png, hs.URL+p.query)...).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s --screenshot %s: %v\n%s", path, p.query, err, out)
		}
		t.Logf("screenshot %s", png)
	}
}

// fleet is a fleet of the given live workers.
type fleet []string

func (f fleet) Workers(context.Context) ([]runs.WorkerPresence, error) {
	var out []runs.WorkerPresence
	for _, n := range f {
		out = append(out, runs.WorkerPresence{ID: events.NewID(), Name: n})
	}
	return out, nil
}

// A run records the worker of its attempt; one whose worker is gone and
// that recorded nothing for longer than the lease is abandoned, one whose
// worker is live is not. Plugins say whether the registry holds them:
// registered, removed (a remote plugin no longer registered) or
// in-process.
func TestAbandonedRunsAndRemovedPlugins(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	release := make(chan struct{})
	deploy := loop.ToolFunc(events.ToolSpec{Name: "deploy"}, func(ctx context.Context, _ json.RawMessage) (string, error) {
		select {
		case <-release:
			return "deployed", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	hooks := policy(t)
	// old-guard was a remote plugin: nobody answers it any more.
	if _, err := remote.Register(b, hooks, interceptors.Registration{Plugin: "old-guard", Stage: events.StageToolBefore, Tools: "clock", Order: 9, Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	reg := remote.NewRegistry(b)
	if err := reg.Put(ctx, interceptors.Registration{Plugin: "audit-log", Stage: events.StageToolBefore}); err != nil {
		t.Fatal(err)
	}
	worker := &events.Worker{Name: "build-7:4242", Host: "build-7"}
	eng, err := loop.New(loop.Config{Emitter: b, History: b, Hooks: hooks, Worker: worker, Tools: []loop.Tool{deploy, clock()},
		Model: scripted.New(&scripted.Script{Replies: []scripted.Reply{
			{Content: "Deploying.", ToolCalls: []scripted.ToolCall{{Name: "clock", Arguments: json.RawMessage(`{}`)}, {Name: "deploy", Arguments: json.RawMessage(`{"command":"make build && ./deploy > deploy.log"}`)}}},
			{Content: "Done."}}})})
	if err != nil {
		t.Fatal(err)
	}
	run := events.NewID()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = eng.Run(ctx, &events.RunRequest{RunID: run, AgentID: "deployer", SessionID: "s1", Prompt: "Deploy"})
	}()
	t.Cleanup(func() { close(release); <-done })
	waitStage(t, ctx, b, run, events.StageToolBefore)
	bustest.Eventuallyf(t, 30*time.Second, func() bool {
		n := 0
		for _, s := range stagesOf(t, ctx, b, run) {
			if s == string(events.StageToolBefore) {
				n++
			}
		}
		return n == 2
	}, "the deploy call to start")

	page := func(live ...string) string {
		return serveGuarded(t, webui.Config{Bus: b, Fleet: fleet(live), Lease: time.Nanosecond, Registry: reg}, httpauth.Config{}).URL
	}
	summary := func(url string) *webui.RunSummary {
		var v webui.RunsView
		getJSON(t, url+"/api/runs", 200, &v)
		if len(v.Runs) != 1 {
			t.Fatalf("%d runs listed", len(v.Runs))
		}
		return v.Runs[0]
	}
	gone, live := page("other:1"), page("other:1", "build-7:4242")
	if r := summary(gone); !r.Abandoned || r.Worker == nil || *r.Worker != *worker {
		t.Fatalf("a run whose worker is gone: %+v (worker %+v); want abandoned, worker %+v", r, r.Worker, worker)
	}
	if r := summary(live); r.Abandoned {
		t.Fatalf("a run whose worker is live is shown abandoned: %+v", r)
	}
	var v webui.RunView
	getJSON(t, gone+"/api/runs/"+run, 200, &v)
	if !v.Run.Abandoned {
		t.Fatalf("the run's page does not say it is abandoned: %+v", v.Run)
	}
	var stats webui.StatsView
	getJSON(t, gone+"/api/stats", 200, &stats)
	want := map[string]string{"audit-log": webui.PluginRegistered, "old-guard": webui.PluginRemoved}
	for p, st := range want {
		if stats.Registry[p] != st {
			t.Fatalf("plugin %s: %q, want %q (all: %v)", p, stats.Registry[p], st, stats.Registry)
		}
	}
	// Text for people: the call's arguments as written, no \u0026.
	const command = `{"command":"make build && ./deploy > deploy.log"}`
	found := false
	for _, e := range v.Entries {
		if e.Stage == events.StageToolBefore && strings.Contains(e.Summary, "deploy") {
			found = true
			if !strings.Contains(e.Summary, command) {
				t.Fatalf("the deploy call's summary %q; want %s", e.Summary, command)
			}
		}
	}
	if !found {
		t.Fatal("no deploy call in the timeline")
	}

	br := newBrowser(t)
	br.do("open the runs", chromedp.Navigate(gone+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-run="`+run+`"]`)))
	if s := eval[string](br, `document.querySelector('tr[data-run] .pill').textContent`); s != "abandoned" {
		t.Fatalf("an abandoned run's status says %q", s)
	}
	if s := eval[string](br, `document.querySelector('tr[data-run] td.took').textContent`); !strings.HasPrefix(s, "abandoned, nothing recorded for ") {
		t.Fatalf("an abandoned run took %q", s)
	}
	br.shot("runs-abandoned")
	br.axe("the runs, one abandoned")
	br.do("open the run", chromedp.Navigate(gone+"/?run="+run+"&agent=deployer&session=s1"), chromedp.WaitVisible(chromedp.CSS(`.timeline`)))
	if s := eval[string](br, `document.querySelector(".run-head .abandoned").textContent`); !strings.Contains(s, "build-7:4242") {
		t.Fatalf("the abandoned run's page says %q; want its worker named", s)
	}
	if s := eval[string](br, `document.querySelector(".timeline").textContent`); !strings.Contains(s, command) || strings.Contains(s, `\u0026`) {
		t.Fatalf("the timeline does not show %s as written:\n%s", command, s)
	}
	br.shot("run-abandoned")
	br.axe("an abandoned run")
	br.do("open the plugins", chromedp.Navigate(gone+"/?view=plugins"), chromedp.WaitVisible(chromedp.CSS(`tr[data-plugin="old-guard"]`)))
	if s := eval[string](br, `document.querySelector('tr[data-plugin="old-guard"] .reg').textContent`); s != "removed from the registry" {
		t.Fatalf("the removed plugin is marked %q", s)
	}
	br.shot("plugins-registry")
	br.axe("the plugins, one removed")
}
