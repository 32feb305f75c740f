package webui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/hookbus/hookbus/audit"
	"github.com/hookbus/hookbus/events"
)

// Diff is the change one decision made to an event's payload.
type Diff struct {
	// Exact is true when Lines compare the payload before and after the
	// decision (pretty-printed JSON); false when the payload before it is
	// not in the stream and Lines are the patch's operations.
	Exact bool       `json:"exact"`
	Lines []DiffLine `json:"lines"`
}

// DiffLine is one line of a diff: Op is " " (unchanged), "-", "+", or
// "…" (unchanged lines left out; Text says how many).
type DiffLine struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// diffContext is how many unchanged lines are kept around a change.
const diffContext = 3

// maxDiffCells bounds the line diff's table (lines before × lines after).
const maxDiffCells = 4_000_000

// drawDiffs fills the Diff of every decision that patched an event. The
// stream holds each event as the interceptors left it; the payload before
// them is rebuilt where the stream records it (audit.Before: a tool call as
// the model asked for it, a tool result before tool.after hooks), and the
// patches are replayed over it in the chain's order. Elsewhere the patch's
// operations are drawn.
func drawDiffs(evs []*events.Event, entries []*Entry) {
	var fold audit.Before
	pending := map[string][]*Decision{} // event id → patches on it, in order
	for i, e := range evs {
		if d := entries[i].Decision; d != nil && len(d.Patch) > 0 && d.EventID != "" {
			pending[d.EventID] = append(pending[d.EventID], d)
		}
		fold.Add(e)
		ds := pending[e.ID]
		if len(ds) == 0 {
			continue
		}
		delete(pending, e.ID)
		before := fold.Of(e)
		for _, d := range ds {
			if before == nil {
				d.Diff = patchOps(d.Patch)
				continue
			}
			after, err := applyPatch(before, d.Patch)
			if err != nil {
				d.Diff, before = patchOps(d.Patch), nil
				continue
			}
			d.Diff, before = lineDiff(before, after), after
		}
	}
	for _, ds := range pending { // the event decided on is not read (yet)
		for _, d := range ds {
			d.Diff = patchOps(d.Patch)
		}
	}
}

func applyPatch(doc, patch []byte) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	return p.Apply(doc)
}

// pretty returns doc as indented JSON lines, object keys sorted.
func pretty(doc []byte) []string {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return strings.Split(string(doc), "\n")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return strings.Split(string(doc), "\n")
	}
	return strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
}

// lineDiff compares two JSON documents line by line (longest common
// subsequence), unchanged stretches shortened to diffContext lines around
// the changes.
func lineDiff(before, after []byte) *Diff {
	a, b := pretty(before), pretty(after)
	if len(a)*len(b) > maxDiffCells {
		return &Diff{Exact: true, Lines: []DiffLine{{"-", fmt.Sprintf("(%d lines)", len(a))}, {"+", fmt.Sprintf("(%d lines: too long to compare here)", len(b))}}}
	}
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var all []DiffLine
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			all = append(all, DiffLine{" ", a[i]})
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] > lcs[i+1][j]):
			all = append(all, DiffLine{"+", b[j]})
			j++
		default:
			all = append(all, DiffLine{"-", a[i]})
			i++
		}
	}
	return &Diff{Exact: true, Lines: shorten(all)}
}

// shorten replaces the unchanged lines farther than diffContext from a
// change by one "…" line.
func shorten(all []DiffLine) []DiffLine {
	near := make([]bool, len(all))
	for i, l := range all {
		if l.Op == " " {
			continue
		}
		for k := max(0, i-diffContext); k <= min(len(all)-1, i+diffContext); k++ {
			near[k] = true
		}
	}
	var out []DiffLine
	for i := 0; i < len(all); {
		if all[i].Op != " " || near[i] {
			out = append(out, all[i])
			i++
			continue
		}
		k := i
		for k < len(all) && all[k].Op == " " && !near[k] {
			k++
		}
		out = append(out, DiffLine{"…", fmt.Sprintf("%d unchanged lines", k-i)})
		i = k
	}
	return out
}

// patchOps draws an RFC 6902 patch's operations, one or two lines each.
func patchOps(patch []byte) *Diff {
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		From  string          `json:"from"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		return &Diff{Lines: []DiffLine{{" ", string(patch)}}}
	}
	var out []DiffLine
	for _, o := range ops {
		switch o.Op {
		case "remove":
			out = append(out, DiffLine{"-", o.Path})
		case "add", "replace":
			out = append(out, DiffLine{"+", o.Path + ": " + string(o.Value)})
		case "move", "copy":
			out = append(out, DiffLine{"+", o.Op + " " + o.From + " → " + o.Path})
		default:
			out = append(out, DiffLine{" ", o.Op + " " + o.Path + " " + string(o.Value)})
		}
	}
	return &Diff{Lines: out}
}
