package webui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/hookbus/hookbus/loop"
	"github.com/hookbus/hookbus/loop/scripted"
	"github.com/hookbus/hookbus/webui"
)

func getJSON(t *testing.T, url string, want int, v any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != want {
		var e webui.ErrorView
		_ = json.NewDecoder(res.Body).Decode(&e)
		t.Fatalf("GET %s: %d %q, want %d", url, res.StatusCode, e.Error, want)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func postJSON(t *testing.T, url, body string, v any) int {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return res.StatusCode
}

func entryStages(es []*webui.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Stage))
	}
	return out
}

// The runs list, a run's timeline in stream order with the child run
// nested, the sandbox's change as an exact diff, the guard's deny, and the
// plugins' stats, all from the stream.
func TestRunsTimelineAndStats(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	res := recordRun(t, ctx, b, "s1")
	hs := serve(t, b, false)

	var runs webui.RunsView
	getJSON(t, hs.URL+"/api/runs", 200, &runs)
	if len(runs.Runs) != 2 || len(runs.Sessions) != 2 {
		t.Fatalf("runs %d, sessions %d; want the planner's and the helper's", len(runs.Runs), len(runs.Sessions))
	}
	var top *webui.RunSummary
	for _, r := range runs.Runs {
		if r.RunID == res.RunID {
			top = r
		}
	}
	if top == nil || top.Status != events.ReasonDone || top.Prompt != "What time is it, and what is 6*7?" ||
		top.Decisions["deny"] != 1 || top.Decisions["modify"] != 1 || top.Decisions["allow"] == 0 {
		t.Fatalf("planner's summary %+v", top)
	}
	getJSON(t, hs.URL+"/api/runs?status=problem", 200, &runs)
	if len(runs.Runs) != 0 {
		t.Fatalf("status=problem lists %d runs; every run ended done", len(runs.Runs))
	}
	getJSON(t, hs.URL+"/api/runs?q=HELPER", 200, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].AgentID != "helper" || runs.Runs[0].Parent == nil || runs.Runs[0].Parent.RunID != res.RunID {
		t.Fatalf("q=HELPER: %+v", runs.Runs)
	}

	var v webui.RunView
	getJSON(t, hs.URL+"/api/runs/"+res.RunID+"?agent=planner&session=s1", 200, &v)
	if got, want := entryStages(v.Entries), stagesOf(t, ctx, b, res.RunID); !slices.Equal(got, want) {
		t.Fatalf("timeline stages\n got %v\nwant %v", got, want)
	}
	var sandbox, guard *webui.Decision
	var child *webui.RunView
	for _, e := range v.Entries {
		if d := e.Decision; d != nil && d.Plugin == "sandbox" {
			sandbox = d
		}
		if d := e.Decision; d != nil && d.Plugin == "guard" {
			guard = d
		}
		if e.Child != nil {
			child = e.Child
		}
	}
	if sandbox == nil || sandbox.Decision != "modify" || sandbox.Diff == nil || !sandbox.Diff.Exact {
		t.Fatalf("sandbox decision %+v", sandbox)
	}
	var minus, plus []string
	for _, l := range sandbox.Diff.Lines {
		switch l.Op {
		case "-":
			minus = append(minus, strings.TrimSpace(l.Text))
		case "+":
			plus = append(plus, strings.TrimSpace(l.Text))
		}
	}
	if !slices.Equal(minus, []string{`"expression": "6*7.5"`}) || !slices.Equal(plus, []string{`"expression": "6*7"`}) {
		t.Fatalf("sandbox diff: - %q + %q", minus, plus)
	}
	if guard == nil || guard.Decision != "deny" || guard.Reason != "rm -rf is not allowed on this host" {
		t.Fatalf("guard decision %+v", guard)
	}
	if child == nil || child.Run.AgentID != "helper" || child.Run.Status != events.ReasonDone || len(child.Entries) == 0 {
		t.Fatalf("child run %+v", child)
	}
	for _, e := range child.Entries {
		if e.RunID != child.Run.RunID {
			t.Fatalf("child timeline holds run %s's %s", e.RunID, e.Stage)
		}
	}

	var stats webui.StatsView
	getJSON(t, hs.URL+"/api/stats", 200, &stats)
	byName := map[string]*audit.PluginTotals{}
	for i, p := range stats.Plugins {
		byName[p.Plugin] = &stats.Plugins[i]
	}
	if p := byName["guard"]; p == nil || p.Calls != 1 || p.Decisions["deny"] != 1 || p.Runs != 1 {
		t.Fatalf("guard stats %+v", p)
	}
	// The sandbox rewrote the planner's sum and the helper's.
	if p := byName["sandbox"]; p == nil || p.Calls != 2 || p.Decisions["modify"] != 2 || p.Runs != 2 || p.MaxUS < p.P50US {
		t.Fatalf("sandbox stats %+v", p)
	}
	if p := byName["audit-log"]; p == nil || p.Decisions["allow"] != p.Calls || p.Calls < 4 {
		t.Fatalf("audit-log stats %+v", p)
	}
}

// Bad parameters, unknown runs and unknown endpoints are errors that say
// what is wrong; a read-only server refuses answers.
func TestErrors(t *testing.T) {
	b := bustest.StartBus(t)
	hs := serve(t, b, false)
	var e webui.ErrorView
	for _, tc := range []struct {
		path string
		code int
		says string
	}{
		{"/api/runs?agent=a.b", 400, "agent"},
		{"/api/runs?since=soon", 400, "since"},
		{"/api/runs?limit=-1", 400, "limit"},
		{"/api/runs/01JNOSUCHRUN", 404, "no event of run 01JNOSUCHRUN"},
		{"/api/nothing", 404, "no endpoint"},
	} {
		getJSON(t, hs.URL+tc.path, tc.code, &e)
		if !strings.Contains(e.Error, tc.says) {
			t.Errorf("GET %s: %q, want it to say %q", tc.path, e.Error, tc.says)
		}
	}
	var runs webui.RunsView
	getJSON(t, hs.URL+"/api/runs", 200, &runs)
	if runs.Runs == nil || len(runs.Runs) != 0 {
		t.Fatalf("an empty stream lists %+v; want an empty list", runs)
	}
	if code := postJSON(t, hs.URL+"/api/runs/01JX/answer", `{"action":"approve"}`, &e); code != 403 || !strings.Contains(e.Error, "--allow-approvals") {
		t.Fatalf("read-only answer: %d %q", code, e.Error)
	}
	rw := serve(t, b, true)
	res, err := http.Post(rw.URL+"/api/runs/01JX/answer", "text/plain", strings.NewReader(`{"action":"approve"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Fatalf("a text/plain answer: %d, want 400", res.StatusCode)
	}
	req, _ := http.NewRequest("POST", rw.URL+"/api/runs/01JX/answer", strings.NewReader(`{"action":"approve"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Fatalf("a cross-site answer: %d, want 403", res.StatusCode)
	}
	for body, says := range map[string]string{
		`{"action":"maybe"}`:              "action",
		`{"action":"approve","by":"eve"}`: `unknown field "by"`, // who answers is who signed in
		`{"action":"reject"}`:             "reason",
		`{"action":"approve","extra":1}`:  "extra",
	} {
		if code := postJSON(t, rw.URL+"/api/runs/01JX/answer", body, &e); code != 400 || !strings.Contains(e.Error, says) {
			t.Errorf("answer %s: %d %q, want 400 saying %q", body, code, e.Error, says)
		}
	}
}

// An approval answered through the API: the worker records it and the run
// finishes; a second answer is refused as answered already.
func TestAnswerApproval(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	startWorker(t, b)
	hs := serve(t, b, true)
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "ops", SessionID: "s1", Prompt: "what is 6*7?"}
	if err := runs.New(b).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitStage(t, ctx, b, req.RunID, events.StageApprovalRequested)
	var pending webui.ApprovalsView
	getJSON(t, hs.URL+"/api/approvals", 200, &pending)
	if len(pending.Approvals) != 1 || pending.Approvals[0].Tool != "calculator" || pending.Approvals[0].Reason != "maths needs a second pair of eyes" {
		t.Fatalf("pending %+v", pending.Approvals)
	}
	var ans webui.AnswerResult
	if code := postJSON(t, hs.URL+"/api/runs/"+req.RunID+"/answer?agent=ops&session=s1", `{"action":"approve","call_id":"`+pending.Approvals[0].CallID+`"}`, &ans); code != 200 || !ans.Recorded {
		t.Fatalf("approve: %d %+v", code, ans)
	}
	waitStage(t, ctx, b, req.RunID, events.StageRunCompleted)
	var v webui.RunView
	getJSON(t, hs.URL+"/api/runs/"+req.RunID, 200, &v)
	// The page records the answer itself, on its server's NATS user's
	// subject (anonymous on the embedded server), under the caller's
	// authenticated identity (the local user on loopback).
	if r := v.Approvals[0].Resolved; v.Run.Status != events.ReasonDone || len(v.Approvals) != 1 || v.Approvals[0].State != events.ActionApprove ||
		r.Identity != httpauth.LocalName() || r.Channel != events.ChannelWeb || r.Writer != events.IdentityAnonymous {
		t.Fatalf("after the answer: %+v, approvals %+v", v.Run, v.Approvals)
	}
	var e webui.ErrorView
	if code := postJSON(t, hs.URL+"/api/runs/"+req.RunID+"/answer", `{"action":"reject","reason":"no"}`, &e); code != 409 {
		t.Fatalf("a second answer: %d %q, want 409", code, e.Error)
	}
}

// The live stream sends a running run's events as they are stored, its
// child's included, from the sequence the page asks for.
func TestLiveStream(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	hs := serve(t, b, false)
	release := make(chan struct{})
	slow := loop.ToolFunc(events.ToolSpec{Name: "slow"}, func(ctx context.Context, _ json.RawMessage) (string, error) {
		select {
		case <-release:
			return "finally", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	eng, err := loop.New(loop.Config{Emitter: b, History: b, Tools: []loop.Tool{slow}, Model: scripted.New(&scripted.Script{Replies: []scripted.Reply{
		{ToolCalls: []scripted.ToolCall{{Name: "slow", Arguments: json.RawMessage(`{}`)}}}, {Content: "{{tool:slow}}"}}})})
	if err != nil {
		t.Fatal(err)
	}
	run := events.NewID()
	done := make(chan error, 1)
	go func() {
		_, err := eng.Run(ctx, &events.RunRequest{RunID: run, AgentID: "a", SessionID: "s", Prompt: "wait"})
		done <- err
	}()
	waitStage(t, ctx, b, run, events.StageToolBefore)
	var v webui.RunView
	getJSON(t, hs.URL+"/api/runs/"+run, 200, &v)
	last := v.Entries[len(v.Entries)-1].Stored

	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(lctx, "GET", hs.URL+"/api/live?run="+run+"&from="+strconv.FormatUint(last+1, 10), nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	got := make(chan webui.Entry)
	go func() {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "{}" {
				var e webui.Entry
				if json.Unmarshal([]byte(d), &e) == nil {
					got <- e
				}
			}
		}
		close(got)
	}()
	close(release)
	var stages []string
	timeout := time.After(time.Minute)
	for !slices.Contains(stages, string(events.StageRunCompleted)) {
		select {
		case e, ok := <-got:
			if !ok {
				t.Fatalf("the stream ended after %v", stages)
			}
			if e.RunID != run || e.Stored <= last {
				t.Fatalf("live entry %+v: another run's, or one the page had", e)
			}
			stages = append(stages, string(e.Stage))
		case <-timeout:
			t.Fatalf("live stream sent %v; no run.completed", stages)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	all := stagesOf(t, ctx, b, run)
	if want := all[len(v.Entries):]; !slices.Equal(stages, want) {
		t.Fatalf("live stages\n got %v\nwant %v", stages, want)
	}
}
