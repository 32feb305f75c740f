// hookbus web timeline: a small vanilla-JS page over the JSON API of
// package webui (docs/PROTOCOL.md, "The web page"). No framework, no build.
"use strict";

const state = { config: { allow_approvals: false }, live: null, expanded: new Set(), view: null, route: "", seq: 0 };

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

// --- formatting ---
const short = (id) => (id || "").slice(0, 10) + "…";
function ago(t) {
  if (!t) return "";
  const s = (Date.now() - new Date(t).getTime()) / 1000;
  if (s < 60) return Math.max(0, Math.round(s)) + "s ago";
  if (s < 3600) return Math.round(s / 60) + "m ago";
  if (s < 86400) return Math.round(s / 3600) + "h ago";
  return Math.round(s / 86400) + "d ago";
}
const clock = (t) => (t ? new Date(t).toLocaleString() : "");
function dur(ms) {
  if (ms < 1) return (ms * 1000).toFixed(0) + " µs";
  if (ms < 1000) return ms.toFixed(ms < 10 ? 1 : 0) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  return Math.floor(ms / 60000) + " m " + Math.round((ms % 60000) / 1000) + " s";
}
const us = (n) => dur(n / 1000);
function span(a, b) {
  if (!a) return "";
  return dur((b ? new Date(b) : new Date()) - new Date(a));
}

function statusPill(status) {
  const shown = status === "unfinished" ? "running" : status; // no end recorded yet
  return h("span", { class: "pill status-" + shown, title: "status: " + status }, shown.replace("_", " "));
}
const parentOf = (r) => (r.parent ? r.parent.run_id : "");
const tokensOf = (r) => (r.usage ? (r.usage.input_tokens || 0) + (r.usage.output_tokens || 0) : 0);

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
function failure(err, what) {
  return h("div", { class: "error", role: "alert" }, h("h2", {}, "Could not load " + what),
    h("p", {}, err.message),
    h("p", { class: "muted" }, "Is the bus still reachable? Check the terminal running observer ui, then ",
      h("a", { href: "#", onclick: (e) => { e.preventDefault(); route(); } }, "try again"), "."));
}

function stopLive() {
  if (state.live) { state.live.close(); state.live = null; }
}

// --- routing ---
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "") || "runs";
  const [path, query] = raw.split("?");
  return { parts: path.split("/"), params: new URLSearchParams(query || "") };
}

async function route() {
  stopLive();
  const { parts, params } = parseHash();
  const main = document.getElementById("main");
  for (const a of document.querySelectorAll("[data-nav]")) {
    a.classList.toggle("active", a.dataset.nav === parts[0] || (parts[0] === "run" && a.dataset.nav === "runs"));
  }
  // A page that loads after the user moved on is dropped: stale() says so.
  const mine = ++state.seq;
  const stale = () => mine !== state.seq;
  try {
    switch (parts[0]) {
      case "run": await showRun(main, parts[1], params, stale); break;
      case "approvals": await showApprovals(main, stale); break;
      case "plugins": await showPlugins(main, params, stale); break;
      default: await showRuns(main, params, stale);
    }
  } catch (err) {
    if (!stale()) main.replaceChildren(failure(err, parts[0] === "run" ? "the run" : parts[0]));
  }
  refreshPending();
}

async function refreshPending() {
  try {
    const a = await api("api/approvals");
    const el = document.getElementById("pending-count");
    el.hidden = a.approvals.length === 0;
    el.textContent = a.approvals.length;
  } catch { /* the page says so where it matters */ }
}

// listLive re-runs fn when a run starts, ends or asks for a human.
function listLive(fn) {
  const es = new EventSource("api/live");
  let timer = null;
  es.addEventListener("entry", () => {
    clearTimeout(timer);
    timer = setTimeout(fn, 300);
  });
  state.live = es;
}

// --- runs ---
async function showRuns(main, params, stale) {
  const f = { agent: params.get("agent") || "", session: params.get("session") || "", status: params.get("status") || "",
    q: params.get("q") || "", since: params.has("since") ? params.get("since") : "7d" };
  const data = await api("api/runs" + qs(f));
  if (stale()) return;
  const setParam = (k, v) => {
    const p = new URLSearchParams(params);
    if (v) p.set(k, v); else p.delete(k);
    location.hash = "#/runs?" + p.toString();
  };
  const input = (name, placeholder) => h("input", { type: "search", name, placeholder, value: f[name],
    onchange: (e) => setParam(name, e.target.value.trim()) });
  const select = (name, options) => h("select", { name, onchange: (e) => setParam(name, e.target.value) },
    options.map(([v, label]) => h("option", { value: v, selected: f[name] === v }, label)));
  const filters = h("form", { class: "filters", onsubmit: (e) => e.preventDefault() },
    input("q", "Search prompt, id, detail"), input("agent", "Agent"), input("session", "Session"),
    select("status", [["", "Any status"], ["running", "Running"], ["waiting", "Waiting for a human"], ["done", "Done"],
      ["problem", "Did not end done"], ["denied", "Denied"], ["stopped", "Stopped"], ["rejected", "Rejected"], ["failed", "Failed"]]),
    select("since", [["1h", "Last hour"], ["24h", "Last 24 hours"], ["7d", "Last 7 days"], ["30d", "Last 30 days"], ["", "All time"]]));

  const sessions = h("aside", { class: "sessions" }, h("h3", {}, "Sessions"),
    data.sessions.length === 0 ? h("p", { class: "muted" }, "None in this window.") :
      h("ul", {}, data.sessions.map((s) => h("li", { class: s.session_id === f.session && s.agent_id === f.agent ? "active" : "" },
        h("a", { href: "#/runs" + qs({ agent: s.agent_id, session: s.session_id, since: f.since === "7d" ? "" : f.since }) },
          h("span", { class: "sess-name" }, s.session_id), h("span", { class: "muted" }, s.agent_id)),
        h("span", { class: "sess-meta" }, s.runs + (s.runs === 1 ? " run" : " runs"),
          s.waiting ? h("span", { class: "pill status-waiting" }, s.waiting + " waiting") : null, " · ", ago(s.last_activity))))),
    (f.agent || f.session) ? h("a", { class: "clear", href: "#/runs" }, "Show all sessions") : null);

  let body;
  if (data.runs.length === 0) {
    const filtered = f.q || f.agent || f.session || f.status;
    body = filtered
      ? empty("No run matches these filters", "Clear a filter, or widen the time window. ", h("a", { href: "#/runs" }, "Show every run"), ".")
      : empty("No runs recorded" + (f.since ? " in this window" : ""), "Start one in another terminal, for example ",
        h("code", {}, 'loop run "What is 6*7?"'), " or ", h("code", {}, "make run"),
        ", and it appears here as it goes. Reading the wrong bus? Restart with ", h("code", {}, "--nats URL"), " or ", h("code", {}, "--store DIR"), ".");
  } else {
    body = h("table", { class: "runs" },
      h("thead", {}, h("tr", {}, ["Status", "Prompt", "Agent / session", "Started", "Took", "Steps", "Hook decisions"].map((c) => h("th", {}, c)))),
      h("tbody", {}, nested(data.runs).map(([r, depth]) => h("tr", { dataset: { run: r.run_id }, class: depth ? "sub-run depth-" + Math.min(depth, 3) : null },
        h("td", {}, statusPill(r.status), r.waiting ? h("span", { class: "muted" }, " " + r.waiting + " call" + (r.waiting > 1 ? "s" : "")) : null),
        h("td", { class: "prompt" }, depth ? h("span", { class: "sub-mark", title: "a sub-agent run of the run above" }, "↳ ") : null, h("a", { href: "#/run/" + r.run_id + qs({ agent: r.agent_id, session: r.session_id }) },
          r.prompt || h("span", { class: "muted" }, "(no prompt)")),
          h("div", { class: "id" }, short(r.run_id), parentOf(r) ? " · child of " + short(parentOf(r)) : "")),
        h("td", {}, r.agent_id, h("div", { class: "muted" }, r.session_id)),
        h("td", { title: clock(r.start) }, ago(r.start)),
        h("td", {}, r.ended ? span(r.start, r.last) : h("span", { class: "muted" }, "…")),
        h("td", { class: "num" }, r.steps || ""),
        h("td", {}, decisionChips(r.decisions))))));
  }
  main.replaceChildren(h("div", { class: "page-head" }, h("h1", {}, "Runs"),
    h("span", { class: "muted" }, data.runs.length + " shown", data.truncated ? " · window too large, narrow it to see every run" : "")),
  filters, h("div", { class: "split" }, sessions, h("section", { class: "list" }, body)));
  listLive(() => { if (parseHash().parts[0] === "runs" || parseHash().parts[0] === "") route(); });
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
async function showRun(main, runID, params, stale) {
  const agent = params.get("agent") || "", session = params.get("session") || "";
  const view = await api("api/runs/" + encodeURIComponent(runID) + qs({ agent, session }));
  if (stale()) return;
  state.view = view;
  state.route = location.hash;
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
  const es = new EventSource("api/live" + qs({ run: view.run.run_id, from: String(lastStored(view) + 1) }));
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
        if (location.hash !== state.route) return;
        try { state.view = await api("api/runs/" + encodeURIComponent(view.run.run_id) + qs({ agent: view.run.agent_id, session: view.run.session_id })); renderRun(main); } catch { /* keep the live view */ }
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
  el.textContent = on ? "live" : "";
}

function renderRun(main) {
  const v = state.view, r = v.run;
  const first = v.entries.length ? new Date(v.entries[0].time) : null;
  const head = h("div", { class: "run-head" },
    h("div", { class: "crumbs" }, h("a", { href: "#/runs" }, "Runs"), " / ",
      h("a", { href: "#/runs" + qs({ agent: r.agent_id, session: r.session_id }) }, r.agent_id + " / " + r.session_id)),
    h("h1", {}, r.prompt || "Run " + short(r.run_id)),
    h("div", { class: "facts" }, statusPill(r.status), h("span", { id: "live-badge", class: "live" }),
      fact("run", h("code", { class: "select" }, r.run_id)),
      r.parent ? fact("child of", h("a", { href: "#/run/" + r.parent.run_id + qs({ agent: r.parent.agent_id, session: r.parent.session_id }) }, short(r.parent.run_id))) : null,
      fact("started", clock(r.start)), fact("took", r.ended ? span(r.start, r.last) : "running " + span(r.start)),
      r.steps ? fact("steps", r.steps) : null, tokensOf(r) ? fact("tokens", tokensOf(r).toLocaleString()) : null),
    r.detail ? h("p", { class: "detail" + (r.status === "done" ? "" : " bad") }, r.detail) : null,
    verifyBadge(v.verify));
  const parts = [head];
  const waiting = (v.approvals || []).filter((a) => a.state === "waiting");
  if (waiting.length) parts.push(h("section", { class: "approvals-panel" }, h("h2", {}, "Waiting for a human"), waiting.map(approvalCard)));
  if (v.truncated) parts.push(h("p", { class: "warn" }, "This run has more events than the page reads at once; the timeline shows the first ones. Use observer replay --run " + r.run_id + " for all of them."));
  parts.push(h("section", { class: "timeline" }, timeline(v, first)));
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

function timeline(v, first) {
  const rows = [];
  for (const e of v.entries) {
    if (e.stage === "step.started") {
      rows.push(h("li", { class: "step-head", dataset: { stage: e.stage, id: e.id } }, h("span", { class: "offset" }, offset(e, first)), "Step " + (e.step || (e.data && e.data.step) || "")));
      continue;
    }
    rows.push(e.decision ? decisionRow(e, first) : eventRow(e, first));
    if (e.child) {
      rows.push(h("li", { class: "child" },
        h("div", { class: "child-head" }, "Sub-agent run ", h("a", { href: "#/run/" + e.child.run.run_id + qs({ agent: e.child.run.agent_id, session: e.child.run.session_id }) }, e.child.run.agent_id + " · " + short(e.child.run.run_id)),
          " ", statusPill(e.child.run.status)),
        timeline(e.child, first)));
    }
  }
  return h("ol", { class: "events" }, rows);
}

function offset(e, first) {
  if (!first) return "";
  return "+" + dur(new Date(e.time) - first);
}

function toggle(id) {
  if (state.expanded.has(id)) state.expanded.delete(id); else state.expanded.add(id);
  renderRun(document.getElementById("main"));
}

function eventRow(e, first) {
  const open = state.expanded.has(e.id);
  return h("li", { class: "ev kind-" + e.kind + (e.failed ? " failed" : ""), dataset: { stage: e.stage, id: e.id } },
    h("span", { class: "offset", title: clock(e.time) }, offset(e, first)),
    h("span", { class: "stage" }, stageLabel[e.stage] || e.stage),
    h("button", { class: "summary", type: "button", "aria-expanded": open ? "true" : "false", title: "show the payload", onclick: () => toggle(e.id) },
      e.subject && e.kind === "tool" ? h("b", {}, e.subject + " ") : null, summaryText(e)),
    open ? h("pre", { class: "payload" }, JSON.stringify(e.data, null, 2)) : null);
}

function summaryText(e) {
  let s = e.summary || "";
  if (e.subject && e.kind === "tool" && s.startsWith(e.subject)) s = s.slice(e.subject.length).replace(/^ → /, "→ ");
  return s;
}

function decisionRow(e, first) {
  const d = e.decision, open = state.expanded.has(e.id);
  const hasDiff = d.diff && d.diff.lines && d.diff.lines.length;
  return h("li", { class: "ev decision dec-row-" + d.decision, dataset: { stage: e.stage, id: e.id, decision: d.decision } },
    h("span", { class: "offset", title: clock(e.time) }, offset(e, first)),
    h("span", { class: "stage", title: "an interceptor decided on the event below" }, "hook"),
    h("div", { class: "dec-body" },
      h("div", { class: "dec-line" }, decisionPill(d.decision), h("b", { class: "plugin" }, d.plugin),
        h("span", { class: "muted" }, " on " + d.stage + " · " + us(d.latency_us) + (d.remote ? " · remote" : " · in-process")),
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
  const card = h("div", { class: "approval", dataset: { run: a.run_id, call: a.call_id } },
    h("div", { class: "ap-head" }, h("b", {}, a.tool), h("span", { class: "muted" }, " call " + a.call_id),
      " · asked by ", h("b", {}, a.asked_by || "the agent's policy"), " · ", ago(a.requested_at)),
    a.reason ? h("div", { class: "reason" }, "“" + a.reason + "”") : null,
    a.arguments ? h("pre", { class: "args" }, JSON.stringify(a.arguments, null, 2)) : null,
    a.suggestions ? h("div", { class: "muted small" }, "the agent suggests: ", h("code", {}, JSON.stringify(a.suggestions))) : null,
    h("div", { class: "muted small" }, "run ", h("a", { href: "#/run/" + a.run_id + qs({ agent: a.agent_id, session: a.session_id }) }, a.agent_id + " / " + a.session_id + " · " + short(a.run_id)),
      a.expires_at ? " · if unanswered, " + (a.on_expiry || "reject_and_continue").replaceAll("_", " ") + " at " + clock(a.expires_at) : ""));
  if (state.config.allow_approvals) card.append(answerForm(a));
  else card.append(h("p", { class: "muted small" }, "Read-only: answer with ", h("code", {}, "observer approve " + a.run_id), ", or start observer ui with --allow-approvals."));
  return card;
}

function answerForm(a) {
  const reason = h("input", { name: "reason", placeholder: "Reason (required to reject; the model sees it with reject and continue)" });
  const note = h("input", { name: "comment", placeholder: "Note (optional; recorded as your note)" });
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
      setTimeout(route, res.recorded ? 400 : 1500);
    } catch (err) {
      out.textContent = err.message;
      out.className += " bad";
      for (const b of form.querySelectorAll("button")) b.disabled = false;
    }
  };
  const form = h("form", { class: "answer", onsubmit: (e) => e.preventDefault() }, reason, note,
    h("div", { class: "buttons" },
      h("button", { type: "button", class: "btn approve", onclick: () => send("approve") }, "Approve"),
      h("button", { type: "button", class: "btn reject-continue", onclick: () => send("reject_and_continue"), title: "The model is told the call was rejected, and the run goes on" }, "Reject and continue"),
      h("button", { type: "button", class: "btn reject", onclick: () => send("reject"), title: "The run ends, rejected" }, "Reject")),
    out);
  return form;
}

async function showApprovals(main, stale) {
  const data = await api("api/approvals");
  if (stale()) return;
  main.replaceChildren(h("div", { class: "page-head" }, h("h1", {}, "Approvals"),
    h("span", { class: "muted" }, state.config.allow_approvals ? "answers are recorded as " + (state.config.user || "you") : "read-only")),
  data.approvals.length === 0
    ? empty("No tool call is waiting for a human", "Calls appear here when a hook answers ", h("code", {}, "ask"),
      " or an agent's approval policy holds them. Runs that wait show as ", statusPill("waiting"), " in ", h("a", { href: "#/runs?status=waiting" }, "Runs"), ".")
    : h("div", { class: "approval-list" }, data.approvals.map(approvalCard)));
  listLive(() => { if (parseHash().parts[0] === "approvals") route(); });
}

// --- plugins ---
async function showPlugins(main, params, stale) {
  const since = params.has("since") ? params.get("since") : "7d";
  const data = await api("api/stats" + qs({ since }));
  if (stale()) return;
  const kinds = ["allow", "modify", "deny", "ask", "mock", "stop", "continue"];
  const rows = data.plugins.map((p) => {
    const fails = Object.values(p.failures || {}).reduce((a, b) => a + b, 0);
    const bar = h("div", { class: "bar", title: kinds.filter((k) => p.decisions[k]).map((k) => p.decisions[k] + " " + k).join(", ") + (fails ? ", " + fails + " failed" : "") },
      kinds.filter((k) => p.decisions[k]).map((k) => h("span", { class: "seg dec-" + k, style: { flexGrow: String(p.decisions[k]) } })),
      fails ? h("span", { class: "seg dec-fail", style: { flexGrow: String(fails) } }) : null);
    return h("tr", { dataset: { plugin: p.plugin } },
      h("td", {}, h("b", {}, p.plugin), h("div", { class: "muted small" }, p.stages.join(", "))),
      h("td", { class: "num" }, p.calls), h("td", { class: "num" }, p.runs),
      h("td", {}, bar, decisionChips(Object.assign({}, p.decisions, fails ? { fail: fails } : {}))),
      h("td", {}, fails ? Object.entries(p.failures).map(([k, n]) => h("div", { class: "bad small" }, n + " " + k.replace("_", " "))) : h("span", { class: "muted" }, "none")),
      h("td", { class: "num" }, us(p.p50_us)), h("td", { class: "num" }, us(p.p99_us)), h("td", { class: "num" }, us(p.max_us)));
  });
  const sel = h("select", { onchange: (e) => { location.hash = "#/plugins" + qs({ since: e.target.value }); } },
    [["1h", "Last hour"], ["24h", "Last 24 hours"], ["7d", "Last 7 days"], ["30d", "Last 30 days"], ["", "All time"]].map(([v, l]) => h("option", { value: v, selected: since === v }, l)));
  main.replaceChildren(h("div", { class: "page-head" }, h("h1", {}, "Plugins"), h("span", { class: "muted" }, "every interceptor's decisions, failures and latency"), sel),
    data.plugins.length === 0
      ? empty("No interceptor has decided anything in this window", "Register one with ", h("code", {}, "observer hooks add --stage tool.before --plugin NAME"),
        " and serve it (README, \"Three terminals\"), or widen the window.")
      : h("table", { class: "plugins" }, h("thead", {}, h("tr", {}, ["Plugin", "Calls", "Runs", "Decisions", "Failures", "p50", "p99", "max"].map((c) => h("th", {}, c)))), h("tbody", {}, rows)));
}

async function init() {
  try {
    state.config = await api("api/config");
  } catch (err) {
    document.getElementById("main").replaceChildren(failure(err, "the page's settings"));
    return;
  }
  document.getElementById("where").textContent = state.config.where ? "reading " + state.config.where : "";
  const mode = document.getElementById("mode");
  mode.textContent = state.config.allow_approvals ? "approvals on" : "read-only";
  mode.classList.add(state.config.allow_approvals ? "rw" : "ro");
  if (state.config.user) {
    const who = document.getElementById("user");
    who.replaceChildren(h("span", { title: "answers are recorded under this name" }, state.config.user));
    if (state.config.signed_in) {
      who.append(h("form", { method: "post", action: "logout", class: "signout" }, h("button", { type: "submit", class: "link" }, "sign out")));
    }
  }
  window.addEventListener("hashchange", route);
  route();
}

init();
