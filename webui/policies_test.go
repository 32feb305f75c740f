package webui_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/hookbus/hookbus/audit/audittest"
	"github.com/hookbus/hookbus/audit/policytest"
	"github.com/hookbus/hookbus/bus"
	"github.com/hookbus/hookbus/bus/bustest"
	"github.com/hookbus/hookbus/bus/policies"
	"github.com/hookbus/hookbus/events"
	"github.com/hookbus/hookbus/internal/httpauth"
	pol "github.com/hookbus/hookbus/policy"
	"github.com/hookbus/hookbus/webui"
)

// fleetYAML is the policy file the policy test's library is tested with:
// no-destructive-shell (audit), no-exfil (enforce), quiet-npm (warn).
const fleetYAML = "../audit/policytest/testdata/fleet.yaml"

// policiesBus records audittest.Fleet with the policies' decisions on it
// (no-exfil enforced a deny; no-destructive-shell, in audit, would have
// denied three calls; a policy deleted since, old-rule, denied one),
// stores the three policies of fleetYAML, and stores the last test of
// each, as observer policy test does.
func policiesBus(t *testing.T) *bus.Bus {
	t.Helper()
	ctx := ctxT(t)
	b := bustest.StartBus(t)
	src, err := os.ReadFile(fleetYAML)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := pol.Parse(fleetYAML, src)
	if err != nil {
		t.Fatal(err)
	}
	version := map[string]string{}
	for _, p := range ps {
		version[p.Name] = p.Version
	}
	hit := func(policy, rule, mode, action string, enforced bool, call int) *events.Event {
		c := audittest.FleetCalls[call]
		e, err := events.New(events.StageHookDecided, events.Meta{Source: "hookbus/loop", AgentID: c.Agent, SessionID: c.Session, RunID: c.Run, Subject: "policy-" + policy},
			events.HookDecided{Plugin: "policy-" + policy, Stage: events.StageToolBefore, Decision: action, Shadow: mode == "audit", EventID: audittest.FleetEventID(call),
				Policy: &events.PolicyHit{Name: policy, Version: version[policy], Rule: rule, Mode: mode, Action: action, Message: rule + " failed", Enforced: enforced}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	hits := []*events.Event{
		hit("no-exfil", "env-then-network", "enforce", "deny", true, 5),
		hit("no-destructive-shell", "rm-rf", "audit", "deny", false, 1),
		hit("no-destructive-shell", "rm-rf", "audit", "deny", false, 8),
		hit("no-destructive-shell", "push", "audit", "ask", false, 2),
		hit("old-rule", "legacy", "enforce", "deny", true, 12),
	}
	for _, e := range audittest.Fleet(t) {
		if err := b.PublishSync(ctx, e); err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			var d events.HookDecided
			if h.DecodeData(&d) == nil && d.EventID == e.ID {
				if err := b.PublishSync(ctx, h); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	st := policies.New(b)
	for _, p := range ps {
		if _, _, err := st.Put(ctx, p, events.Actor{Channel: events.ChannelCLI}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := policytest.Run(ctx, b, policytest.Config{Policies: ps})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Policies {
		one := *rep
		one.Policies = []*policytest.PolicyReport{p}
		raw, err := json.Marshal(&one)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutTest(ctx, p.Name, raw); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func servePolicies(t *testing.T, b *bus.Bus) string {
	t.Helper()
	return serveGuarded(t, webui.Config{Bus: b, Policies: policies.New(b)}, httpauth.Config{}).URL
}

// GET /api/policies lists each stored policy with its mode and rollout,
// its enforced hits and would-be hits counted from the record, and its
// last test's flips; a policy deleted from the store but whose decisions
// the window holds is listed, not stored.
func TestPoliciesView(t *testing.T) {
	url := servePolicies(t, policiesBus(t))
	var v webui.PoliciesView
	getJSON(t, url+"/api/policies", 200, &v)
	var names []string
	for _, p := range v.Policies {
		names = append(names, p.Name)
	}
	if want := []string{"no-destructive-shell", "no-exfil", "old-rule", "quiet-npm"}; !slices.Equal(names, want) || v.NoStore != "" || len(v.Unreadable) != 0 {
		t.Fatalf("policies %v (no store %q, unreadable %v)", names, v.NoStore, v.Unreadable)
	}
	shell, exfil, old, npm := v.Policies[0], v.Policies[1], v.Policies[2], v.Policies[3]
	if !shell.Stored || shell.Mode != "audit" || shell.Rollout != 100 || !strings.HasPrefix(shell.Version, "sha256:") || shell.AppliedAt.IsZero() {
		t.Fatalf("no-destructive-shell %+v", shell)
	}
	if h := shell.Hits; h == nil || len(h.Enforced) != 0 || h.WouldHit["deny"] != 2 || h.WouldHit["ask"] != 1 || h.Rules["rm-rf"] != 2 || len(h.Latest) != 3 {
		t.Fatalf("no-destructive-shell's hits %+v", shell.Hits)
	}
	if shell.Test == nil || len(shell.Test.Policies) != 1 || len(shell.Test.Policies[0].Flips) != 5 {
		t.Fatalf("no-destructive-shell's last test %+v", shell.Test)
	}
	if exfil.Mode != "enforce" || exfil.Hits == nil || exfil.Hits.Enforced["deny"] != 1 || exfil.Test == nil || len(exfil.Test.Policies[0].Flips) != 1 {
		t.Fatalf("no-exfil %+v", exfil)
	}
	if old.Stored || old.Hits == nil || old.Hits.Enforced["deny"] != 1 || old.Test != nil {
		t.Fatalf("a deleted policy's hits: %+v", old)
	}
	if npm.Mode != "warn" || npm.Hits != nil || npm.Test == nil {
		t.Fatalf("quiet-npm %+v", npm)
	}

	// The page inlines the view.
	d, raw, _ := pageData(t, url+"/?view=policies", 200)
	var inlined webui.PoliciesView
	if err := json.Unmarshal(raw, &inlined); err != nil || d.View != webui.ViewPolicies || len(inlined.Policies) != 4 || inlined.Policies[0].Hits == nil || inlined.Policies[0].Test == nil {
		t.Fatalf("GET /?view=policies: view %q, %+v (%v)", d.View, inlined, err)
	}

	// Without a store the view says so and shows the record's hits.
	url = serveGuarded(t, webui.Config{Bus: bustest.StartBus(t)}, httpauth.Config{}).URL
	getJSON(t, url+"/api/policies", 200, &v)
	if v.NoStore == "" || len(v.Policies) != 0 {
		t.Fatalf("no store: %+v", v)
	}
}

// The policies view in a browser: a card per policy with its mode,
// rollout, enforced and would-be hits, and its last test's flips with
// links to their runs.
func TestBrowserPolicies(t *testing.T) {
	url := servePolicies(t, policiesBus(t))
	br := newBrowser(t)
	br.do("open the policies", chromedp.Navigate(url+"/?view=policies&since="), chromedp.WaitVisible(chromedp.CSS(`section[data-policy="no-exfil"]`)))
	got := eval[[]string](br, `[...document.querySelectorAll("section[data-policy]")].map(e => e.dataset.policy + ":" + e.dataset.mode)`)
	if want := []string{"no-destructive-shell:audit", "no-exfil:enforce", "old-rule:", "quiet-npm:warn"}; !slices.Equal(got, want) {
		t.Fatalf("cards %v", got)
	}
	flips := eval[[]string](br, `[...document.querySelectorAll('section[data-policy="no-destructive-shell"] tr[data-flip]')].map(e => e.dataset.flip)`)
	if want := []string{"denied", "asked", "allowed", "denied", "denied"}; !slices.Equal(flips, want) {
		t.Fatalf("flips %v", flips)
	}
	if s := eval[string](br, `document.querySelector('section[data-policy="no-destructive-shell"] .policy-hits').textContent`); !strings.Contains(s, "deny 2") || !strings.Contains(s, "ask 1") {
		t.Fatalf("would-be hits say %q", s)
	}
	if s := eval[string](br, `document.querySelector('section[data-policy="old-rule"] .policy-head').textContent`); !strings.Contains(s, "deleted") {
		t.Fatalf("a deleted policy's head says %q", s)
	}
	if n := eval[int](br, `document.querySelectorAll('section[data-policy="no-exfil"] tr[data-flip] a[href*="run=01KFZCC"]').length`); n != 1 {
		t.Fatalf("no-exfil's flip links %d runs", n)
	}
	br.do("open no-destructive-shell's latest decisions", chromedp.Click(chromedp.CSS(`section[data-policy="no-destructive-shell"] .latest-hits summary`)),
		chromedp.WaitVisible(chromedp.CSS(`section[data-policy="no-destructive-shell"] .latest-hits tr[data-hit]`)))
	if hits := eval[[]string](br, `[...document.querySelectorAll('section[data-policy="no-destructive-shell"] .latest-hits tr[data-hit]')].map(e => e.dataset.hit)`); !slices.Equal(hits, []string{"deny", "ask", "deny"}) {
		t.Fatalf("latest decisions %v, newest first", hits)
	}
	br.shot("policies")
	br.axe("the policies")
	br.do("open a flip's run", chromedp.Click(chromedp.CSS(`section[data-policy="no-exfil"] tr[data-flip] a`)), chromedp.WaitVisible(chromedp.CSS(".timeline")))
}
