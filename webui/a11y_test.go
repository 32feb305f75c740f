package webui_test

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/chromedp"
)

// axeSource is axe-core (npm axe-core 4.14.1, axe.min.js, MPL-2.0: its
// license is beside it), vendored so that the accessibility check runs
// with no download and the same rules everywhere.
//
//go:embed testdata/axe-core/axe.min.js
var axeSource string

// axeViolation is one rule axe-core finds broken, with the elements that
// break it.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axe runs axe-core's WCAG 2.x A and AA rules (and its best practices) on
// the page as it is, and fails the test on a serious or critical
// violation; it logs the others.
func (b *browser) axe(page string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](axeSource+";true")); err != nil {
		b.t.Fatalf("load axe-core into %s: %v", page, err)
	}
	const run = `axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}, resultTypes: ["violations"]})
  .then(r => JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(" ") + ": " + n.failureSummary)}))))`
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](run, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("axe-core on %s: %v", page, err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		b.t.Fatalf("axe-core on %s: %v", page, err)
	}
	var bad []string
	for _, v := range vs {
		line := fmt.Sprintf("%s (%s): %s\n    %s", v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n    "))
		if v.Impact == "serious" || v.Impact == "critical" {
			bad = append(bad, line)
		} else {
			b.t.Logf("axe-core on %s, %s", page, line)
		}
	}
	if len(bad) > 0 {
		b.t.Errorf("axe-core finds %d serious or critical violation(s) on %s:\n%s", len(bad), page, strings.Join(bad, "\n"))
	}
}
