package webui_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/runs"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/webui"
)

// A page reached under another site's name (DNS rebinding) answers
// nothing: neither the stream nor an approval, whatever Origin says.
func TestRebindingRefused(t *testing.T) {
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	startWorker(t, b)
	hs := serve(t, b, true)
	req := &events.RunRequest{RunID: events.NewID(), AgentID: "ops", SessionID: "s1", Prompt: "what is 6*7?"}
	if err := runs.New(b).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitStage(t, ctx, b, req.RunID, events.StageApprovalRequested)
	const evil = "attacker.example:18080"
	do := func(method, path, body string) (int, string) {
		t.Helper()
		r, _ := http.NewRequestWithContext(ctx, method, hs.URL+path, strings.NewReader(body))
		r.Host = evil
		r.Header.Set("Origin", "http://"+evil)
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(out)
	}
	for _, path := range []string{"/api/runs", "/api/approvals", "/api/runs/" + req.RunID, "/"} {
		if code, body := do("GET", path, ""); code != http.StatusMisdirectedRequest || strings.Contains(body, req.RunID) {
			t.Errorf("GET %s as %s: %d %.200s, want 421 and nothing of the stream", path, evil, code, body)
		}
	}
	if code, body := do("POST", "/api/runs/"+req.RunID+"/answer?agent=ops&session=s1", `{"action":"approve","by":"mallory"}`); code != http.StatusMisdirectedRequest {
		t.Errorf("POST an answer as %s: %d %s, want 421", evil, code, body)
	}
	var pending webui.ApprovalsView
	getJSON(t, hs.URL+"/api/approvals", 200, &pending)
	if len(pending.Approvals) != 1 || pending.Approvals[0].RunID != req.RunID {
		t.Fatalf("after the refused answer the call must still wait: %+v", pending.Approvals)
	}
}
