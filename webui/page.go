package webui

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// Views of the page (PageData.View), chosen by the query of GET /: view=
// approvals, plugins or policies, run=ID for a run's timeline, else the runs list
// (its filters: agent, session, status, q, since). The same query, sent to
// the JSON endpoints, reads the same data.
const (
	ViewRuns      = "runs"
	ViewRun       = "run"
	ViewApprovals = "approvals"
	ViewPlugins   = "plugins"
	ViewPolicies  = "policies"
)

// PageData is the page's first view, inlined in the HTML of GET / (a
// script element of type application/json, id page-data), so that the
// page shows content as soon as it loads, with no request of its own: on
// a slow connection, and to a browser that takes a screenshot of it.
type PageData struct {
	Config ConfigView `json:"config"`
	View   string     `json:"view"`
	// Data is what the view's endpoint replies (RunsView, RunView,
	// ApprovalsView, StatsView, PoliciesView); Error, instead, what it failed with.
	Data  any    `json:"data,omitempty"`
	Error string `json:"error,omitempty"`
}

// pageDataMarker is where static/index.html takes the first view.
var pageDataMarker = []byte("<!--page-data-->")

// handlePage serves the page with its first view inlined (PageData).
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	d := PageData{Config: s.configView(r), View: ViewRuns}
	q := r.URL.Query()
	var err error
	switch {
	case q.Get("run") != "":
		d.View = ViewRun
		d.Data, err = s.runPage(r, q.Get("run"))
	case q.Get("view") == ViewApprovals:
		d.View = ViewApprovals
		d.Data, err = s.approvalsView(r)
	case q.Get("view") == ViewPlugins:
		d.View = ViewPlugins
		d.Data, err = s.statsView(withDefaultWindow(r))
	case q.Get("view") == ViewPolicies:
		d.View = ViewPolicies
		d.Data, err = s.policiesView(withDefaultWindow(r))
	default:
		d.Data, err = s.runsView(withDefaultWindow(r))
	}
	code := http.StatusOK
	if err != nil {
		if code = statusOf(err); code == 0 {
			if r.Context().Err() != nil {
				return
			}
			code = http.StatusInternalServerError
			s.log.Warn("webui: page failed", "query", r.URL.RawQuery, "err", err)
		}
		d.Data, d.Error = nil, errorText(err)
	}
	// encoding/json writes <, > and & as \u003c, \u003e and \u0026: the
	// data cannot end the script element it is in.
	b, err := json.Marshal(d)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var page bytes.Buffer
	page.Grow(len(s.index) + len(b) + 64)
	before, after, _ := bytes.Cut(s.index, pageDataMarker)
	page.Write(before)
	page.WriteString(`<script type="application/json" id="page-data">`)
	page.Write(b)
	page.WriteString(`</script>`)
	page.Write(after)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(page.Bytes())
}

// withDefaultWindow is r with since=7d when it gives no since (since= is
// all time): the lists' default window.
func withDefaultWindow(r *http.Request) *http.Request {
	q := r.URL.Query()
	if q.Has("since") {
		return r
	}
	q.Set("since", "7d")
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery, r2.Form = q.Encode(), nil
	return r2
}
