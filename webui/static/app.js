// hookbus web timeline: a small vanilla-JS page over the JSON API of
// package webui (docs/PROTOCOL.md, "The web page"). No framework, no build.
//
// Each view is a URL of its own (the query of "/": ?run=ID, ?view=approvals,
// ?view=plugins, ?view=policies, else the runs list and its filters), and the server inlines
// the first view's data in the page (script#page-data), so the page shows
// content as it loads; live updates then read the JSON endpoints.
"use strict";

const state = { config: { allow_approvals: false }, live: null, expanded: new Set(), view: null, seq: 0 };

// h builds an element: h("div", {class: "x", onclick: fn}, child, "text", ...).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style") Object.assign(el.style, v); // CSSOM: the CSP allows no inline style attribute
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === undefined || kid === null || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

async function api(path, opts) {
  const res = await fetch(path, opts);
  let body;
  try { body = await res.json(); } catch { body = {}; }
  if (res.status === 401 && body.login) { location.href = body.login; throw new Error("sign in first"); }
  if (!res.ok) throw new Error(body.error || res.status + " " + res.statusText);
  return body;
}

function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) p.set(k, v);
  const s = p.toString();
  return s ? "?" + s : "";
}

// Links to the views: each a URL the server renders with its data.
const runsHref = (params) => qs(params || {}) || "./";
const runHref = (id, agent, session) => qs({ run: id, agent, session });
const viewHref = (view, params) => qs(Object.assign({ view }, params || {}));

// --- formatting ---
const short = (id) => (id || "").slice(0, 10) + "…";
const pad = (n) => String(n).padStart(2, "0");
// One date format: local time, to the second; the ISO time (UTC) on hover.
function localTime(t) {
  const d = new Date(t);
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
}
function timeEl(t) {
  if (!t) return h("span", { class: "muted" }, "—");
  const iso = new Date(t).toISOString();
  return h("time", { datetime: iso, title: iso }, localTime(t));
}
function dur(ms) {
  if (ms < 1) return (ms * 1000).toFixed(0) + " µs";
  if (ms < 1000) return ms.toFixed(ms < 10 ? 1 : 0) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  return Math.floor(ms / 60000) + " m " + Math.round((ms % 60000) / 1000) + " s";
}
const us = (n) => dur(n / 1000);
// age is how long ago t was, coarsely: "45 s", "6 m", "2 h 5 m", "3 d".
function age(t) {
  const s = Math.max(0, Math.round((Date.now() - new Date(t).getTime()) / 1000));
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " m";
  if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " m";
  return Math.floor(s / 86400) + " d";
}

// shownStatus is what the page calls a run's status: an unfinished run is
// running, or abandoned when no attempt holds it any more.
function shownStatus(r) {
  if (r.status === "unfinished") return r.abandoned ? "abandoned" : "running";
  return r.status;
}
function statusPill(r) {
  const shown = typeof r === "string" ? r : shownStatus(r);
  return h("span", { class: "pill status-" + shown, title: "status: " + shown.replace("_", " ") }, shown.replace("_", " "));
}
// took is how long the run took, or what it is doing now.
function took(r, approvals) {
  if (r.status === "waiting") {
    const asked = (approvals || []).filter((a) => a.state === "waiting").map((a) => a.requested_at).sort()[0] || r.last;
    return "waiting for approval, " + age(asked);
  }
  if (r.ended) return dur(new Date(r.last) - new Date(r.start));
  if (r.abandoned) return "abandoned, nothing recorded for " + age(r.last);
  return "running, " + age(r.start);
}
const parentOf = (r) => (r.parent ? r.parent.run_id : "");
const tokensOf = (r) => (r.usage ? (r.usage.input_tokens || 0) + (r.usage.output_tokens || 0) : 0);
const workerName = (w) => (w ? w.name + (w.host && !w.name.startsWith(w.host + ":") ? " on " + w.host : "") : "");
function definitionName(d) {
  if (!d) return "";
  let s = d.name || "";
  if (d.version) s += " v" + d.version;
  const digest = (d.digest || "").slice(0, 12);
  return s ? s + " (" + digest + ")" : digest;
}

// verifyBadge says whether the run's record is intact (its hash chain and
// the signature on its end), or lists what is wrong. The verdict says which
// problems fail it (audit.Verifier's rule, the same as observer verify's):
// tampering, a signer not trusted, and with the server's --require-signed
// an end not signed; the others (no end yet, unsigned) are notes.
function verifyBadge(v) {
  if (!v) return null;
  const problems = v.problems || [];
  const failing = problems.filter((p) => p.fails);
  const has = (kind) => problems.some((p) => p.kind === kind);
  if (failing.length > 0) {
    return h("div", { class: "verify bad" }, h("b", {}, "✗ record does not verify"),
      h("ul", {}, failing.map((p) => h("li", {}, h("span", { class: "kind" }, p.kind.replace("_", " ")), p.seq ? " at seq " + p.seq : "", ": ", p.detail))));
  }
  if (!v.ended) return h("div", { class: "verify plain" }, "✓ record intact so far (not ended, so not signed yet)");
  if (!v.signer) return h("div", { class: "verify plain" }, "✓ record intact, unsigned");
  if (has("unknown_signer")) return h("div", { class: "verify plain" }, "✓ record intact, signed by ", h("code", {}, v.signer), " (a key not given to this page)");
  return h("div", { class: "verify ok" }, "✓ record intact, signed by ", h("code", {}, v.signer));
}
function decisionPill(kind) {
  return h("span", { class: "pill dec-" + kind }, kind);
}
function decisionChips(counts) {
  if (!counts) return h("span", { class: "muted" }, "—");
  const order = ["allow", "modify", "deny", "ask", "mock", "stop", "continue", "fail"];
  return h("span", { class: "chips" }, order.filter((k) => counts[k]).map((k) =>
    h("span", { class: "chip dec-" + k, title: counts[k] + " " + k }, k + " " + counts[k])));
}

function empty(title, ...hint) {
  return h("div", { class: "empty" }, h("h2", {}, title), h("p", {}, ...hint));
}
function failure(message, what) {
  const missing = message.startsWith("not found");
  return h("div", { class: "error", role: "alert" }, h("h2", {}, (missing ? "Not found: " : "Could not load ") + what),
    h("p", {}, message),
    missing
      ? h("p", { class: "muted" }, "Check the address, or find it in the ", h("a", { href: "./" }, "runs list"),
        " (widen its window: a run older than the stream keeps is gone).")
      : h("p", { class: "muted" }, "Is the bus still reachable? Check the terminal running observer ui, then ",
        h("a", { href: location.search || "./" }, "try again"), "."));
}

// field is a form control with its visible label.
function field(label, control, cls) {
  return h("label", { class: "field" + (cls ? " " + cls : "") }, h("span", { class: "field-label" }, label), control);
}

function stopLive() {
  if (state.live) { state.live.close(); state.live = null; }
}

// --- routing ---

// legacyHash turns an address of the page's earlier hash routes
// (#/run/ID?agent=..., #/approvals, #/plugins, #/runs?...) into its query.
function legacyHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  if (!location.hash.startsWith("#/")) return null;
  const [path, query] = raw.split("?");
  const parts = path.split("/");
  const p = new URLSearchParams(query || "");
  if (parts[0] === "run" && parts[1]) { p.set("run", parts[1]); return "?" + p.toString(); }
  if (parts[0] === "approvals" || parts[0] === "plugins" || parts[0] === "policies") p.set("view", parts[0]);
  const s = p.toString();
  return s ? "?" + s : location.pathname;
}

function currentView() {
  const params = new URLSearchParams(location.search);
  let view = "runs";
  if (params.get("run")) view = "run";
  else if (["approvals", "plugins", "policies"].includes(params.get("view"))) view = params.get("view");
  return { view, params };
}

// show draws the current view: from data (the page's inlined first view)
// or read from the JSON endpoints.
async function show(data) {
  const { view, params } = currentView();
  const main = document.getElementById("main");
  for (const a of document.querySelectorAll("[data-nav]")) {
    const on = a.dataset.nav === view || (view === "run" && a.dataset.nav === "runs");
    a.classList.toggle("active", on);
    if (on) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  // A read that ends after a newer one began is dropped.
  const mine = ++state.seq;
  const stale = () => mine !== state.seq;
  const what = { run: "the run", approvals: "the approvals", plugins: "the plugins", policies: "the policies", runs: "the runs" }[view];
  try {
    if (data && data.error) throw new Error(data.error);
    const d = data ? data.data : null;
    switch (view) {
      case "run": await showRun(main, params, d, stale); break;
      case "approvals": await showApprovals(main, d, stale); break;
      case "plugins": await showPlugins(main, params, d, stale); break;
      case "policies": await showPolicies(main, params, d, stale); break;
      default: await showRuns(main, params, d, stale);
    }
  } catch (err) {
    if (!stale()) { stopLive(); main.replaceChildren(failure(err.message, what)); }
  }
  refreshPending(view === "approvals" && data && data.data ? data.data : null);
}

async function refreshPending(known) {
  try {
    const a = known || await api("api/approvals");
    const el = document.getElementById("pending-count");
    el.hidden = a.approvals.length === 0;
    el.textContent = a.approvals.length;
    el.title = a.approvals.length + " waiting";
  } catch { /* the page says so where it matters */ }
}

// listLive re-reads the view when a run starts, ends or asks for a human.
function listLive(fn) {
  stopLive();
  const es = new EventSource("api/live");
  let timer = null;
  es.addEventListener("entry", () => {
    clearTimeout(timer);
    timer = setTimeout(fn, 300);
  });
  state.live = es;
}

// --- runs ---
const windows = [["1h", "Last hour"], ["24h", "Last 24 hours"], ["7d", "Last 7 days"], ["30d", "Last 30 days"], ["", "All time"]];

async function showRuns(main, params, data, stale) {
  const f = { agent: params.get("agent") || "", session: params.get("session") || "", status: params.get("status") || "",
    q: params.get("q") || "", since: params.has("since") ? params.get("since") : "7d" };
  if (!data) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(f)) if (v || k === "since") p.set(k, v);
    data = await api("api/runs?" + p.toString());
  }
  if (stale()) return;
  const setParam = (k, v) => {
    const p = new URLSearchParams(location.search);
    if (v || k === "since") p.set(k, v); else p.delete(k);
    if (k === "since" && v === "7d") p.delete(k);
    location.search = p.toString();
  };
  const input = (name, label, placeholder) => field(label, h("input", { type: "search", name, id: "filter-" + name, placeholder, value: f[name],
    onchange: (e) => setParam(name, e.target.value.trim()) }), "field-" + name);
  const select = (name, label, options) => field(label, h("select", { name, id: "filter-" + name, onchange: (e) => setParam(name, e.target.value) },
    options.map(([v, text]) => h("option", { value: v, selected: f[name] === v }, text))));
  const filters = h("form", { class: "filters", role: "search", "aria-label": "Filter the runs", onsubmit: (e) => e.preventDefault() },
    input("q", "Search", "prompt, run id, detail"), input("agent", "Agent", "any"), input("session", "Session", "any"),
    select("status", "Status", [["", "Any status"], ["running", "Running"], ["waiting", "Waiting for a human"], ["done", "Done"],
      ["problem", "Did not end done"], ["denied", "Denied"], ["stopped", "Stopped"], ["rejected", "Rejected"], ["failed", "Failed"]]),
    select("since", "Window", windows));

  const sinceParam = f.since === "7d" ? "" : f.since;
  const sessions = h("nav", { class: "sessions", "aria-label": "Sessions" }, h("h2", { class: "side-title" }, "Sessions"),
    data.sessions.length === 0 ? h("p", { class: "muted" }, "None in this window.") :
      h("ul", {}, data.sessions.map((s) => h("li", { class: s.session_id === f.session && s.agent_id === f.agent ? "active" : "" },
        h("a", { href: runsHref({ agent: s.agent_id, session: s.session_id, since: sinceParam }) },
          h("span", { class: "sess-name" }, s.session_id), h("span", { class: "sess-agent" }, s.agent_id)),
        h("span", { class: "sess-meta" }, s.runs + (s.runs === 1 ? " run" : " runs"),
          s.waiting ? [" ", h("span", { class: "pill status-waiting" }, s.waiting + " waiting")] : null, " · last ", timeEl(s.last_activity))))),
    (f.agent || f.session) ? h("a", { class: "clear", href: runsHref({ since: sinceParam }) }, "Show all sessions") : null);

  let body;
  if (data.runs.length === 0) {
    const filtered = f.q || f.agent || f.session || f.status;
    body = filtered
      ? empty("No run matches these filters", "Clear a filter, or widen the time window. ", h("a", { href: "./" }, "Show every run"), ".")
      : empty("No runs recorded" + (f.since ? " in this window" : ""), "Start one in another terminal, for example ",
        h("code", {}, 'loop run "What is 6*7?"'), " or ", h("code", {}, "make run"),
        ", and it appears here as it goes. Reading the wrong bus? Restart with ", h("code", {}, "--nats URL"), " or ", h("code", {}, "--store DIR"), ".");
  } else {
    body = h("table", { class: "runs" },
      h("caption", { class: "visually-hidden" }, "Runs, newest first"),
      h("thead", {}, h("tr", {}, ["Status", "Prompt", "Agent / session", "Started", "Took", "Steps", "Hook decisions"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, nested(data.runs).map(([r, depth]) => h("tr", { dataset: { run: r.run_id }, class: depth ? "sub-run depth-" + Math.min(depth, 3) : null },
        h("td", {}, statusPill(r), r.waiting ? h("span", { class: "muted small" }, " " + r.waiting + " call" + (r.waiting > 1 ? "s" : "")) : null),
        h("td", { class: "prompt" }, depth ? h("span", { class: "sub-mark", title: "a sub-agent run of the run above" }, "↳ ") : null,
          h("a", { href: runHref(r.run_id, r.agent_id, r.session_id) }, r.prompt || "(no prompt)"),
          h("div", { class: "id" }, short(r.run_id), parentOf(r) ? " · child of " + short(parentOf(r)) : "")),
        h("td", {}, r.agent_id, h("div", { class: "muted" }, r.session_id)),
        h("td", { class: "nowrap" }, timeEl(r.start)),
        h("td", { class: "took" + (r.abandoned ? " bad" : "") }, took(r)),
        h("td", { class: "num" }, r.steps || ""),
        h("td", {}, decisionChips(r.decisions))))));
  }
  main.replaceChildren(h("div", { class: "page-head" }, h("h1", {}, "Runs"),
    h("span", { class: "muted" }, data.runs.length + " shown", data.truncated ? " · window too large, narrow it to see every run" : "")),
  filters, h("div", { class: "split" }, sessions, h("section", { class: "list", "aria-label": "Runs" }, body)));
  listLive(() => { if (currentView().view === "runs") show(null); });
}

// nested orders runs so that a child run follows its parent (when the
// parent is listed), with its depth.
function nested(runs) {
  const listed = new Set(runs.map((r) => r.run_id));
  const kids = new Map();
  const tops = [];
  for (const r of runs) {
    const p = parentOf(r);
    if (p && listed.has(p)) {
      if (!kids.has(p)) kids.set(p, []);
      kids.get(p).push(r);
    } else tops.push(r);
  }
  const out = [];
  const add = (r, depth) => {
    out.push([r, depth]);
    for (const k of (kids.get(r.run_id) || []).slice().reverse()) add(k, depth + 1);
  };
  for (const r of tops) add(r, 0);
  return out;
}

// --- a run's timeline ---
function runURL(id, agent, session) {
  return "api/runs/" + encodeURIComponent(id) + qs({ agent, session });
}

async function showRun(main, params, data, stale) {
  const id = params.get("run"), agent = params.get("agent") || "", session = params.get("session") || "";
  const view = data || await api(runURL(id, agent, session));
  if (stale()) return;
  state.view = view;
  renderRun(main);
  if (!view.run.ended || view.run.status === "waiting") startRunLive(main, view);
}

function lastStored(view) {
  let n = 0;
  const walk = (v) => { for (const e of v.entries) { n = Math.max(n, e.stored || 0); if (e.child) walk(e.child); } };
  walk(view);
  return n;
}

// findRunView returns the view of run id in the tree, or the entry that
// starts it (subagent.before naming it), to attach a new child to.
function findRunView(v, id) {
  if (v.run && v.run.run_id === id) return v;
  for (const e of v.entries) {
    if (e.child) { const f = findRunView(e.child, id); if (f) return f; }
    else if (e.stage === "subagent.before" && e.data && e.data.run_id === id) {
      e.child = { run: { run_id: id, agent_id: e.data.agent_id, session_id: e.data.session_id, status: "unfinished" }, entries: [] };
      return e.child;
    }
  }
  return null;
}

function startRunLive(main, view) {
  stopLive();
  const es = new EventSource("api/live" + qs({ run: view.run.run_id, from: String(lastStored(view) + 1) }));
  const here = location.search;
  let refetch = null;
  es.addEventListener("ready", () => { document.body.dataset.live = "on"; renderLiveBadge(); });
  es.addEventListener("entry", (msg) => {
    const en = JSON.parse(msg.data);
    const target = findRunView(state.view, en.run_id) || state.view;
    if (target.entries.some((e) => e.id === en.id)) return;
    target.entries.push(en);
    renderRun(main);
    const ends = ["run.completed", "run.failed", "approval.requested", "approval.resolved"];
    if (ends.includes(en.stage)) { // the summary, approvals and exact diffs come with the whole view
      clearTimeout(refetch);
      refetch = setTimeout(async () => {
        if (location.search !== here) return;
        try { state.view = await api(runURL(view.run.run_id, view.run.agent_id, view.run.session_id)); renderRun(main); } catch { /* keep the live view */ }
        if (state.view.run.ended && state.view.run.status !== "waiting") stopLive();
        renderLiveBadge();
        refreshPending();
      }, 250);
    }
  });
  es.addEventListener("failure", (msg) => { document.body.dataset.live = "failed"; renderLiveBadge(JSON.parse(msg.data).error); });
  state.live = es;
}

function renderLiveBadge(err) {
  const el = document.getElementById("live-badge");
  if (!el) return;
  if (err) { el.className = "live failed"; el.textContent = "live updates stopped: " + err; return; }
  const on = state.live !== null;
  el.className = on ? "live on" : "live";
  el.textContent = on ? "live updates" : "";
}

// attempts lists the run's attempts (one per run.started): when each
// started, the worker it ran in, its agent definition, and the models that
// answered it.
function attempts(v) {
  const out = [];
  let cur = null;
  for (const e of v.entries) {
    if (e.stage === "run.started") {
      const d = e.data || {};
      cur = { n: out.length + 1, time: e.time, resumed: !!d.resumed, worker: d.worker, definition: d.definition, previous: d.previous_definition, models: [] };
      out.push(cur);
    } else if (cur && e.stage === "model.responded" && e.data && e.data.model) {
      const p = e.data.provider, m = p && !e.data.model.startsWith(p + ":") ? p + ":" + e.data.model : e.data.model;
      if (!cur.models.includes(m)) cur.models.push(m);
    }
  }
  return out;
}

function attemptsView(list) {
  if (list.length === 0) return null;
  return h("div", { class: "attempts" },
    h("h2", { class: "side-title" }, list.length === 1 ? "Attempt" : list.length + " attempts (the run was resumed)"),
    h("ol", {}, list.map((a) => h("li", { dataset: { attempt: a.n } },
      h("span", { class: "attempt-n" }, "#" + a.n), " started ", timeEl(a.time),
      fact("worker", a.worker ? workerName(a.worker) : h("span", { class: "muted" }, "not recorded")),
      fact("definition", a.definition ? definitionName(a.definition) : h("span", { class: "muted" }, "none")),
      a.previous ? fact("adopted from", definitionName(a.previous)) : null,
      // A coding agent's run (no worker, no definition) has no model of hookbus' to name.
      a.models.length || a.worker || a.definition ? fact(a.models.length > 1 ? "models" : "model", a.models.length ? a.models.join(", ") : h("span", { class: "muted" }, "no reply yet")) : null))));
}

function renderRun(main) {
  const v = state.view, r = v.run;
  const first = v.entries.length ? new Date(v.entries[0].time) : null;
  const list = attempts(v);
  const head = h("div", { class: "run-head" },
    h("nav", { class: "crumbs", "aria-label": "Breadcrumbs" }, h("a", { href: "./" }, "Runs"), " / ",
      h("a", { href: runsHref({ agent: r.agent_id, session: r.session_id }) }, r.agent_id + " / " + r.session_id)),
    h("h1", {}, r.prompt || "Run " + short(r.run_id)),
    h("div", { class: "facts" }, statusPill(r), h("span", { id: "live-badge", class: "live", role: "status", "aria-live": "polite" }),
      fact("run", h("code", { class: "select" }, r.run_id)),
      r.parent ? fact("child of", h("a", { href: runHref(r.parent.run_id, r.parent.agent_id, r.parent.session_id) }, short(r.parent.run_id))) : null,
      fact("started", timeEl(r.start)), fact(r.ended ? "took" : "now", took(r, v.approvals)),
      r.steps ? fact("steps", r.steps) : null, tokensOf(r) ? fact("tokens", tokensOf(r).toLocaleString()) : null),
    r.detail ? h("p", { class: "detail" + (r.status === "done" ? "" : " bad") }, r.detail) : null,
    r.abandoned ? h("p", { class: "detail bad abandoned" }, "No attempt holds this run any more: nothing was recorded for " + age(r.last) +
      (r.worker ? " and its worker, " + workerName(r.worker) + ", is not running" : ", and no live worker runs it") +
      ". It goes on when a worker serving agent " + r.agent_id + " takes its request again (loop serve).") : null,
    verifyBadge(v.verify),
    attemptsView(list));
  const parts = [head];
  const waiting = (v.approvals || []).filter((a) => a.state === "waiting");
  if (waiting.length) parts.push(h("section", { class: "approvals-panel", "aria-label": "Waiting for a human" }, h("h2", {}, "Waiting for a human"), waiting.map(approvalCard)));
  if (v.truncated) parts.push(h("p", { class: "warn" }, "This run has more events than the page reads at once; the timeline shows the first ones. Use observer replay --run " + r.run_id + " for all of them."));
  parts.push(h("section", { class: "timeline", "aria-label": "Timeline" }, timeline(v, first)));
  main.replaceChildren(...parts);
  renderLiveBadge();
}

function fact(label, value) {
  return h("span", { class: "fact" }, h("span", { class: "label" }, label), " ", value);
}

const stageLabel = {
  "intake": "intake", "run.started": "run started", "step.started": "step", "context.assembled": "context",
  "model.responded": "model", "model.failed": "model failed", "tool.before": "tool call", "tool.result": "raw result",
  "tool.after": "tool result", "tool.failed": "tool failed", "approval.requested": "approval asked",
  "approval.resolved": "approval answered", "subagent.before": "sub-agent", "subagent.after": "sub-agent done",
  "subagent.failed": "sub-agent failed", "step.completed": "step done", "stop": "stop", "run.completed": "run ended",
  "run.failed": "run failed", "hook.decided": "hook", "hook.failed": "hook failed",
};

// timeline draws a run's events in record order. The hooks' decisions on
// an event are recorded just before it, and decided after it was made:
// each is drawn inside the event it decided (in record order), so times
// only run forwards.
function timeline(v, first) {
  const ids = new Set(v.entries.map((e) => e.id));
  const on = new Map(); // event id → the decisions on it
  for (const e of v.entries) {
    const target = e.decision && e.decision.event_id;
    if (target && ids.has(target)) {
      if (!on.has(target)) on.set(target, []);
      on.get(target).push(e);
    }
  }
  const rows = [];
  for (const e of v.entries) {
    if (e.decision && on.has(e.decision.event_id)) continue; // drawn inside its event
    if (e.stage === "step.started") {
      rows.push(h("li", { class: "step-head", dataset: { stage: e.stage, id: e.id, time: e.time } }, offsetEl(e, first), h("span", {}, "Step " + (e.step || (e.data && e.data.step) || ""))));
      continue;
    }
    rows.push(e.decision ? decisionRow(e, first) : eventRow(e, first, on.get(e.id)));
    if (e.child) {
      rows.push(h("li", { class: "child" },
        h("div", { class: "child-head" }, "Sub-agent run ", h("a", { href: runHref(e.child.run.run_id, e.child.run.agent_id, e.child.run.session_id) }, e.child.run.agent_id + " · " + short(e.child.run.run_id)),
          " ", statusPill(e.child.run)),
        timeline(e.child, first)));
    }
  }
  return h("ol", { class: "events" }, rows);
}

function offsetEl(e, first) {
  const iso = new Date(e.time).toISOString();
  return h("span", { class: "offset", title: localTime(e.time) + " (" + iso + ")" }, first ? "+" + dur(new Date(e.time) - first) : "");
}

function toggle(id) {
  if (state.expanded.has(id)) state.expanded.delete(id); else state.expanded.add(id);
  renderRun(document.getElementById("main"));
}

function eventRow(e, first, decisions) {
  const open = state.expanded.has(e.id);
  return h("li", { class: "ev kind-" + e.kind + (e.failed ? " failed" : "") + (decisions ? " decided" : ""), dataset: { stage: e.stage, id: e.id, time: e.time } },
    offsetEl(e, first),
    h("span", { class: "stage" }, stageLabel[e.stage] || e.stage),
    h("button", { class: "summary", type: "button", "aria-expanded": open ? "true" : "false", title: "show the payload", onclick: () => toggle(e.id) },
      e.subject && e.kind === "tool" ? h("b", {}, e.subject + " ") : null, summaryText(e)),
    open ? h("pre", { class: "payload" }, JSON.stringify(e.data, null, 2)) : null,
    decisions ? h("ol", { class: "decisions", "aria-label": "what the hooks decided on this " + (stageLabel[e.stage] || e.stage) },
      decisions.map((d) => decisionRow(d, first))) : null);
}

function summaryText(e) {
  let s = e.summary || "";
  if (e.subject && e.kind === "tool" && s.startsWith(e.subject)) s = s.slice(e.subject.length).replace(/^ → /, "→ ");
  // The page's one date format: an approval's expiry in local time.
  if (e.stage === "approval.requested") s = s.replace(/\(expires ([^ )]+)\)$/, (all, t) => isNaN(new Date(t)) ? all : "(expires " + localTime(t) + ")");
  return s;
}

function decisionRow(e, first) {
  const d = e.decision, open = state.expanded.has(e.id);
  const hasDiff = d.diff && d.diff.lines && d.diff.lines.length;
  return h("li", { class: "ev decision dec-row-" + d.decision, dataset: { stage: e.stage, id: e.id, time: e.time, decision: d.decision, on: d.event_id || "" } },
    offsetEl(e, first),
    h("span", { class: "stage" }, e.stage === "hook.failed" ? "hook failed" : "hook"),
    h("div", { class: "dec-body" },
      h("div", { class: "dec-line" }, decisionPill(d.decision), h("b", { class: "plugin" }, d.plugin),
        h("span", { class: "muted" }, " on " + d.stage + " · " + us(d.latency_us) + (d.remote ? " · remote" : d.fail_kind ? "" : " · in-process")),
        d.fail_kind ? h("span", { class: "muted" }, " · " + d.fail_kind + ", policy " + d.policy + " → " + (d.outcome || "").replace("_", " ")) : null,
        hasDiff ? h("button", { class: "diff-toggle", type: "button", "aria-expanded": open ? "true" : "false", onclick: () => toggle(e.id) }, open ? "hide change" : "show change") : null),
      d.reason ? h("div", { class: "reason" }, "“" + d.reason + "”") : null,
      d.error ? h("div", { class: "reason bad" }, d.error) : null,
      (d.warnings || []).map((w) => h("div", { class: "warn-line" }, "warning: " + w)),
      open && hasDiff ? diffView(d.diff) : null));
}

function diffView(diff) {
  return h("div", { class: "diff" },
    h("div", { class: "diff-note muted" }, diff.exact ? "payload before and after this hook" : "the patch this hook applied (the payload before it is not in the stream)"),
    h("pre", {}, diff.lines.map((l) => h("span", { class: "dl " + ({ "+": "add", "-": "del", "…": "gap" }[l.op] || "ctx") },
      (l.op === "…" ? "  ⋯ " : l.op + " ") + l.text + "\n"))));
}

// --- approvals ---
function approvalCard(a) {
  const card = h("article", { class: "approval", dataset: { run: a.run_id, call: a.call_id }, "aria-label": a.tool + " call " + a.call_id },
    h("div", { class: "ap-head" }, h("b", {}, a.tool), h("span", { class: "muted" }, " call " + a.call_id),
      " · asked by ", h("b", {}, a.asked_by || "the agent's policy"), " · ", timeEl(a.requested_at),
      h("span", { class: "muted" }, " (" + age(a.requested_at) + " ago)")),
    a.reason ? h("div", { class: "reason" }, "“" + a.reason + "”") : null,
    a.arguments ? h("pre", { class: "args" }, JSON.stringify(a.arguments, null, 2)) : null,
    a.suggestions ? h("div", { class: "muted small" }, "the agent suggests: ", h("code", {}, JSON.stringify(a.suggestions))) : null,
    h("div", { class: "muted small" }, "run ", h("a", { href: runHref(a.run_id, a.agent_id, a.session_id) }, a.agent_id + " / " + a.session_id + " · " + short(a.run_id)),
      a.expires_at ? [" · if unanswered, " + (a.on_expiry || "reject_and_continue").replaceAll("_", " ") + " at ", timeEl(a.expires_at)] : ""));
  if (state.config.allow_approvals) card.append(answerForm(a));
  else card.append(h("p", { class: "muted small" }, "Read-only: answer with ", h("code", {}, "observer approve " + a.run_id), ", or start observer ui with --allow-approvals."));
  return card;
}

function answerForm(a) {
  const id = "answer-" + a.call_id;
  const reason = h("input", { name: "reason", id: id + "-reason", placeholder: "required to reject; the model sees it with reject and continue" });
  const note = h("input", { name: "comment", id: id + "-comment", placeholder: "optional; recorded as your note" });
  const out = h("div", { class: "answer-out", role: "status" });
  const send = async (action) => {
    out.className = "answer-out";
    if (action !== "approve" && !reason.value.trim()) { out.textContent = "A rejection needs a reason."; out.className += " bad"; reason.focus(); return; }
    for (const b of form.querySelectorAll("button")) b.disabled = true;
    out.textContent = "Sending…";
    try {
      const res = await api("api/runs/" + encodeURIComponent(a.run_id) + "/answer" + qs({ agent: a.agent_id, session: a.session_id }), {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ action, call_id: a.call_id, reason: reason.value.trim(), comment: note.value.trim() }),
      });
      out.textContent = res.message;
      out.className += " ok";
      setTimeout(() => show(null), res.recorded ? 400 : 1500);
    } catch (err) {
      out.textContent = err.message;
      out.className += " bad";
      for (const b of form.querySelectorAll("button")) b.disabled = false;
    }
  };
  const form = h("form", { class: "answer", onsubmit: (e) => e.preventDefault() }, field("Reason", reason), field("Note", note),
    h("div", { class: "buttons" },
      h("button", { type: "button", class: "btn approve", onclick: () => send("approve") }, "Approve"),
      h("button", { type: "button", class: "btn reject-continue", onclick: () => send("reject_and_continue"), title: "The model is told the call was rejected, and the run goes on" }, "Reject and continue"),
      h("button", { type: "button", class: "btn reject", onclick: () => send("reject"), title: "The run ends, rejected" }, "Reject")),
    out);
  return form;
}

async function showApprovals(main, data, stale) {
  data = data || await api("api/approvals");
  if (stale()) return;
  main.replaceChildren(h("div", { class: "page-head" }, h("h1", {}, "Approvals"),
    h("span", { class: "muted" }, state.config.allow_approvals ? "answers are recorded as " + (state.config.user || "you") : "read-only")),
  data.approvals.length === 0
    ? empty("No tool call is waiting for a human", "Calls appear here when a hook answers ", h("code", {}, "ask"),
      " or an agent's approval policy holds them. Runs that wait show as ", statusPill("waiting"), " in ", h("a", { href: "?status=waiting" }, "Runs"), ".")
    : h("div", { class: "approval-list" }, data.approvals.map(approvalCard)));
  listLive(() => { if (currentView().view === "approvals") show(null); });
}

// --- plugins ---
const registryNote = {
  registered: ["registered", "in the interceptor registry: loops call it"],
  removed: ["removed from the registry", "no longer in the interceptor registry: no loop calls it any more; its past decisions stay in the record"],
  gone: ["gone", "registered with a lease it no longer renews (its process stopped): no loop calls it; observer hooks prune removes its registrations"],
  in_process: ["in-process", "called inside a loop's own process (an agent file's hook, a library's chain): the registry does not list it"],
};

async function showPlugins(main, params, data, stale) {
  const since = params.has("since") ? params.get("since") : "7d";
  data = data || await api("api/stats" + "?" + new URLSearchParams({ since }).toString());
  if (stale()) return;
  const kinds = ["allow", "modify", "deny", "ask", "mock", "stop", "continue"];
  const rows = data.plugins.map((p) => {
    const fails = Object.values(p.failures || {}).reduce((a, b) => a + b, 0);
    const reg = data.registry && registryNote[data.registry[p.plugin]];
    const bar = h("div", { class: "bar", role: "img", "aria-label": kinds.filter((k) => p.decisions[k]).map((k) => p.decisions[k] + " " + k).join(", ") + (fails ? ", " + fails + " failed" : "") },
      kinds.filter((k) => p.decisions[k]).map((k) => h("span", { class: "seg dec-" + k, style: { flexGrow: String(p.decisions[k]) } })),
      fails ? h("span", { class: "seg dec-fail", style: { flexGrow: String(fails) } }) : null);
    return h("tr", { dataset: { plugin: p.plugin, registry: data.registry ? data.registry[p.plugin] : "" }, class: data.registry && (data.registry[p.plugin] === "removed" || data.registry[p.plugin] === "gone") ? "removed" : null },
      h("td", {}, h("b", {}, p.plugin), reg ? h("span", { class: "reg reg-" + data.registry[p.plugin], title: reg[1] }, reg[0]) : null,
        h("div", { class: "muted small" }, p.stages.join(", "))),
      h("td", { class: "num" }, p.calls), h("td", { class: "num" }, p.runs),
      h("td", {}, bar, decisionChips(Object.assign({}, p.decisions, fails ? { fail: fails } : {}))),
      h("td", {}, fails ? Object.entries(p.failures).map(([k, n]) => h("div", { class: "bad small" }, n + " " + k.replace("_", " "))) : h("span", { class: "muted" }, "none")),
      h("td", { class: "num" }, us(p.p50_us)), h("td", { class: "num" }, us(p.p99_us)), h("td", { class: "num" }, us(p.max_us)));
  });
  const sel = field("Window", h("select", { name: "since", id: "plugins-since", onchange: (e) => { location.search = "?" + new URLSearchParams({ view: "plugins", since: e.target.value }).toString(); } },
    windows.map(([v, l]) => h("option", { value: v, selected: since === v }, l))), "head-field");
  main.replaceChildren(h("div", { class: "page-head" }, h("h1", {}, "Plugins"), h("span", { class: "muted" }, "every interceptor's decisions, failures and latency"), sel),
    data.plugins.length === 0
      ? empty("No interceptor has decided anything in this window", "Register one with ", h("code", {}, "observer hooks add --stage tool.before --plugin NAME"),
        " and serve it (README, \"Three terminals\"), or widen the window.")
      : h("table", { class: "plugins" }, h("caption", { class: "visually-hidden" }, "Plugins"),
        h("thead", {}, h("tr", {}, ["Plugin", "Calls", "Runs", "Decisions", "Failures", "p50", "p99", "max"].map((c) => h("th", { scope: "col" }, c)))), h("tbody", {}, rows)));
}

// --- policies ---
// The classes of a policy's actions and of a test's flips: a policy's deny
// looks like an interceptor's.
const actionClass = { deny: "dec-deny", ask: "dec-ask", mutate: "dec-modify", warn: "dec-warn", allow: "dec-allow" };
const flipClass = { denied: "dec-deny", allowed: "dec-allow", rewritten: "dec-modify", asked: "dec-ask", failed: "dec-fail" };
const flipOrder = ["denied", "allowed", "rewritten", "asked", "failed"];
const modeNote = {
  enforce: "enforced: its decisions are applied",
  warn: "warn: recorded, the call goes on with a warning",
  audit: "audit: recorded as a shadow decision, never applied",
};

function countChips(counts, classes, none, cls) {
  const keys = Object.keys(counts || {}).filter((k) => counts[k]);
  if (keys.length === 0) return h("span", { class: "muted" }, none);
  return h("span", { class: "chips" }, keys.map((k) => h("span", { class: "chip " + (classes[k] || cls || ""), title: counts[k] + " " + k }, k + " " + counts[k])));
}

function rolloutMeter(p) {
  if (!p.stored) return null;
  if (p.mode !== "enforce") return h("span", { class: "rollout muted", title: modeNote[p.mode] }, "not enforced");
  const pct = p.rollout;
  return h("span", { class: "rollout", title: pct + "% of sessions enforced; the others audited" },
    h("span", { class: "meter", role: "img", "aria-label": "enforced in " + pct + " percent of sessions" }, h("span", { class: "meter-fill", style: { width: pct + "%" } })),
    h("span", {}, "enforced in " + pct + "% of sessions"));
}

const sum = (o) => Object.values(o || {}).reduce((a, b) => a + b, 0);

// policySummary is one line per policy, linked to its card: what it is,
// what it did, what it would have, what its last test found.
function policySummary(list) {
  return h("table", { class: "policy-summary" }, h("caption", { class: "visually-hidden" }, "Policies at a glance"),
    h("thead", {}, h("tr", {}, ["Policy", "Mode", "Enforced hits", "Would-be hits", "Last test"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, list.map((p) => {
      const hits = p.hits || {};
      const pr = p.test && p.test.policies && p.test.policies[0];
      return h("tr", { dataset: { summary: p.name } },
        h("td", {}, h("a", { href: "#policy-" + p.name }, h("b", {}, p.name))),
        h("td", {}, p.stored ? h("span", { class: "pill mode-" + p.mode, title: modeNote[p.mode] }, p.mode) : h("span", { class: "pill status-stopped" }, "deleted"),
          p.stored && p.mode === "enforce" && p.rollout < 100 ? h("span", { class: "muted small" }, " " + p.rollout + "%") : null),
        h("td", { class: "num" }, sum(hits.enforced) || h("span", { class: "muted" }, "0")),
        h("td", { class: "num" }, sum(hits.would_hit) || h("span", { class: "muted" }, "0")),
        h("td", {}, pr ? [h("b", {}, pr.flips.length === 1 ? "1 flip" : pr.flips.length + " flips"), " ", countChips(flipSummary(pr), flipClass, ""), h("span", { class: "muted small" }, " ", age(p.test.time), " ago")]
          : h("span", { class: "muted" }, "never tested")));
    })));
}

function flipSummary(pr) {
  const n = {};
  for (const f of pr.flips) n[f.kind] = (n[f.kind] || 0) + 1;
  return n;
}

function actionWords(a) {
  if (!a) return "";
  const what = a.command || a.url || (a.paths || []).join(" ") || (a.server ? a.server + "/" + a.mcp_tool : "");
  return a.kind + (what ? " " + what : "");
}

function testSection(p) {
  if (!p.test || !p.test.policies || p.test.policies.length === 0) {
    return h("div", { class: "policy-test" }, h("h3", {}, "Last test against history"),
      h("p", { class: "muted" }, "Never tested. Run ", h("code", {}, "observer policy test -f FILE"), " to replay the recorded calls of every harness through it."));
  }
  const t = p.test, pr = t.policies[0];
  const stale = p.version && pr.version !== p.version;
  const head = h("p", { class: "test-head" }, "Tested ", timeEl(t.time), " on ", String(pr.calls), " calls (", String(pr.matched), " matched",
    t.since ? ", since " + localTime(t.since) : "", t.agent ? ", agents " + t.agent : "", t.harness ? ", harness " + t.harness : "", "): ",
    h("b", {}, pr.flips.length === 0 ? "no call would change" : pr.flips.length + (pr.flips.length === 1 ? " call would change" : " calls would change")), " ",
    countChips(flipSummary(pr), flipClass, ""),
    stale ? h("span", { class: "warn small" }, " tested version " + pr.version.slice(0, 15) + "…, not the stored one: test it again") : null);
  const counts = pr.counts.filter((c) => c.denied + c.allowed + c.rewritten + c.asked + c.failed > 0);
  const perAgent = counts.length === 0 ? null : h("table", { class: "policy-counts" }, h("caption", { class: "visually-hidden" }, "Flips per agent and harness"),
    h("thead", {}, h("tr", {}, ["Agent", "Harness", "Calls", ...flipOrder].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, counts.map((c) => h("tr", { dataset: { agent: c.agent, harness: c.harness } }, h("td", {}, c.agent), h("td", {}, h("span", { class: "harness" }, c.harness)),
      h("td", { class: "num" }, c.calls), flipOrder.map((k) => h("td", { class: "num" + (c[k] ? " " + flipClass[k] : "") }, c[k] || ""))))));
  const flips = pr.flips.length === 0 ? null : h("table", { class: "flips" }, h("caption", { class: "visually-hidden" }, "Calls that would change"),
    h("thead", {}, h("tr", {}, ["Would be", "Agent", "Harness", "Call", "Action", "Was", "Rule", "Enforced"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, pr.flips.map((f) => h("tr", { dataset: { flip: f.kind, event: f.event_id } },
      h("td", {}, h("span", { class: "pill " + flipClass[f.kind] }, f.kind)),
      h("td", {}, f.agent), h("td", {}, h("span", { class: "harness" }, f.harness)),
      h("td", {}, h("a", { href: runHref(f.run, f.agent, f.session), title: "run " + f.run }, f.tool || f.stage), h("div", { class: "muted small mono" }, f.call_id || f.event_id)),
      h("td", { class: "action" }, h("code", {}, actionWords(f.action))),
      h("td", {}, decisionPill(f.recorded), f.recorded_by ? h("div", { class: "muted small" }, "by " + f.recorded_by) : null),
      h("td", {}, h("b", {}, f.rule || "—"), f.message ? h("div", { class: "muted small" }, f.message) : null),
      h("td", {}, f.enforced ? "yes" : h("span", { class: "muted", title: "the policy as written would only record it (" + p.mode + (p.rollout < 100 ? ", rollout " + p.rollout + "%" : "") + ")" }, "no, recorded only"))))));
  return h("div", { class: "policy-test" }, h("h3", {}, "Last test against history"), head, perAgent, flips);
}

// latestHits lists a policy's newest decisions that did something (an
// allow with every rule holding is counted, not listed), linked to their
// runs.
function latestHits(list) {
  const shown = list.filter((x) => x.action !== "allow").slice(0, 5);
  if (shown.length === 0) return null;
  return h("details", { class: "latest-hits" }, h("summary", {}, "Latest decisions (" + shown.length + ")"),
    h("table", {}, h("caption", { class: "visually-hidden" }, "Latest decisions"),
      h("thead", {}, h("tr", {}, ["Time", "Agent", "Run", "Rule", "Decided", "Applied", "Message"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, shown.map((x) => h("tr", { dataset: { hit: x.action } },
        h("td", { class: "nowrap" }, timeEl(x.time)), h("td", {}, x.agent),
        h("td", {}, h("a", { href: runHref(x.run, x.agent, x.session), title: "run " + x.run }, short(x.run))),
        h("td", {}, h("b", {}, x.rule || "—")), h("td", {}, h("span", { class: "pill " + (actionClass[x.action] || "") }, x.action)),
        h("td", {}, x.enforced ? "enforced" : h("span", { class: "muted" }, "recorded only")),
        h("td", { class: "muted small" }, x.message || ""))))));
}

function policyCard(p) {
  const hits = p.hits || { enforced: {}, would_hit: {}, rules: {}, latest: [] };
  return h("section", { class: "policy", dataset: { policy: p.name, mode: p.mode || "" }, "aria-labelledby": "policy-" + p.name },
    h("div", { class: "policy-head" },
      h("h2", { id: "policy-" + p.name }, p.name),
      p.stored ? h("span", { class: "pill mode-" + p.mode, title: modeNote[p.mode] }, p.mode) : h("span", { class: "pill status-stopped", title: "no longer in the policy store: its past decisions stay in the record" }, "deleted"),
      rolloutMeter(p),
      p.version ? h("code", { class: "version", title: p.version }, p.version.slice(0, 15) + "…") : null,
      p.applied_by ? h("span", { class: "muted small" }, "applied by ", p.applied_by, " ", timeEl(p.applied_at)) : null),
    h("div", { class: "policy-hits" },
      h("div", {}, h("h3", {}, "Enforced"), countChips(hits.enforced, actionClass, "no enforced decision in this window")),
      h("div", {}, h("h3", {}, "Would have hit"), h("div", { class: "muted small" }, "audit, warn, outside the rollout"), countChips(hits.would_hit, actionClass, "none in this window")),
      h("div", {}, h("h3", {}, "By rule"), countChips(hits.rules, {}, "—", "rule"))),
    latestHits(hits.latest || []),
    testSection(p));
}

async function showPolicies(main, params, data, stale) {
  const since = params.has("since") ? params.get("since") : "7d";
  data = data || await api("api/policies" + "?" + new URLSearchParams({ since }).toString());
  if (stale()) return;
  const sel = field("Window", h("select", { name: "since", id: "policies-since", onchange: (e) => { location.search = "?" + new URLSearchParams({ view: "policies", since: e.target.value }).toString(); } },
    windows.map(([v, l]) => h("option", { value: v, selected: since === v }, l))), "head-field");
  const parts = [h("div", { class: "page-head" }, h("h1", {}, "Policies"), h("span", { class: "muted" }, "each policy, what it decided, what it would have, and its last test"), sel)];
  if (data.no_store) parts.push(h("p", { class: "warn" }, data.no_store + ": only the policies' decisions the record holds are shown."));
  if ((data.unreadable || []).length) parts.push(h("div", { class: "warn" }, h("b", {}, "Not readable: "), data.unreadable.join("; ")));
  if (data.truncated) parts.push(h("p", { class: "warn" }, "The window holds more events than one page reads: the hits count only part of them. Narrow the window."));
  if (data.policies.length === 0) {
    parts.push(empty("No policy is stored and none decided anything in this window", "Test one against history with ", h("code", {}, "observer policy test -f FILE"),
      ", then apply it with ", h("code", {}, "observer policy apply -f FILE"), " (docs/POLICIES.md)."));
  } else {
    parts.push(policySummary(data.policies), h("div", { class: "policy-list" }, data.policies.map(policyCard)));
  }
  main.replaceChildren(...parts);
}

function header(config) {
  document.getElementById("where").textContent = config.where ? "reading " + config.where : "";
  const mode = document.getElementById("mode");
  mode.textContent = config.allow_approvals ? "approvals on" : "read-only";
  mode.classList.add(config.allow_approvals ? "rw" : "ro");
  if (config.user) {
    const who = document.getElementById("user");
    who.replaceChildren(h("span", { title: "answers are recorded under this name" }, config.user));
    if (config.signed_in) {
      who.append(h("form", { method: "post", action: "logout", class: "signout" }, h("button", { type: "submit", class: "link" }, "sign out")));
    }
  }
}

// An address of the earlier hash routes, typed or followed on this page,
// loads its view.
window.addEventListener("hashchange", () => {
  const legacy = legacyHash();
  if (legacy !== null) location.replace(legacy);
});

async function init() {
  const legacy = legacyHash();
  if (legacy !== null) { location.replace(legacy); return; }
  let data = null;
  const el = document.getElementById("page-data");
  if (el) {
    try { data = JSON.parse(el.textContent); } catch { data = null; }
  }
  try {
    state.config = data ? data.config : await api("api/config");
  } catch (err) {
    document.getElementById("main").replaceChildren(failure(err.message, "the page's settings"));
    return;
  }
  header(state.config);
  show(data);
}

init();
