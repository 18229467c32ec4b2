"use strict";
// The explorer's page: every action asks the server and renders the view
// it answers with. document.body.dataset.actions counts rendered answers
// and window.lastActionMs is the last one's time (the browser tests read
// them).
let V = null;
const $ = (id) => document.getElementById(id);
const el = (tag, attrs, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e[k] = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
};

async function call(method, url, body) {
  const t0 = performance.now();
  let j;
  try {
    const r = await fetch(url, { method, headers: { "Content-Type": "application/json" },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
    j = await r.json();
  } catch (e) {
    j = { error: "the explorer did not answer: " + e.message };
  }
  if (j.error) {
    $("error").textContent = j.error;
    $("error").hidden = false;
  } else {
    $("error").hidden = true;
    V = j;
    await render();
  }
  window.lastActionMs = performance.now() - t0;
  document.body.dataset.actions = String((+document.body.dataset.actions || 0) + 1);
}

const goTo = (step) => call("POST", "api/goto", { step });
const take = (i) => call("POST", "api/step", { step: V.step, event: i });

async function render() {
  $("scenario").textContent = V.scenario;
  $("system").textContent = V.system + (V.doc ? " — " + V.doc : "");
  $("depth").textContent = V.depth;
  $("notice").textContent = V.notice;
  $("notice").hidden = !V.notice;
  $("back").disabled = V.depth === 0;
  $("fwd").disabled = V.forward < 0;
  renderEvents();
  renderPath();
  renderTree();
  renderPreds();
  renderNodes();
  renderMessages();
  const r = await fetch("api/msc.svg");
  $("msc").innerHTML = await r.text();
  $("right").scrollTop = $("right").scrollHeight; // the current step is the last row
}

function renderEvents() {
  const box = $("events");
  box.replaceChildren();
  if (!V.events || V.events.length === 0) box.append(el("p", {}, "no event enabled"));
  for (const e of V.events || []) {
    const label = e.index < 9 ? `${e.index + 1}. ` : "";
    const b = el("button", { class: "ev" + (e.taken >= 0 ? " taken" : ""), "data-index": e.index, "data-kind": e.kind,
      title: e.taken >= 0 ? `taken before: step #${e.taken}` : "take this event", onclick: () => take(e.index) },
      label, el("span", { class: "kind k-" + e.kind }, e.kind), " ", e.desc.replace(/^\w+ /, ""));
    box.append(b);
  }
}

function renderPath() {
  const ol = $("path");
  ol.replaceChildren();
  for (const p of V.path) {
    const li = el("li", { "data-step": p.step, class: (p.step === V.step ? "current " : "") + (p.pred ? "bad" : ""),
      title: p.pred ? "violates " + p.pred : "", onclick: () => goTo(p.step) }, p.desc);
    ol.append(li);
  }
  const cur = ol.querySelector(".current");
  if (cur) cur.scrollIntoView({ block: "nearest" });
}

// renderTree nests a list only where a step has more than one child, so
// a long branch stays one column.
function renderTree() {
  const kids = new Map();
  for (const t of V.tree) {
    if (!kids.has(t.parent)) kids.set(t.parent, []);
    kids.get(t.parent).push(t);
  }
  const onPath = new Set(V.path.map((p) => p.step));
  const chain = (t) => {
    const ul = el("ul", {});
    for (;;) {
      const step = t.step;
      const cls = (t.step === V.step ? "current " : "") + (onPath.has(t.step) ? "onpath " : "") + (t.pred ? "bad" : "");
      const li = el("li", { "data-step": t.step, class: cls },
        el("span", { title: t.pred ? "violates " + t.pred : "", onclick: () => goTo(step) }, `#${t.step} (${t.depth}) ${t.desc}`));
      ul.append(li);
      const cs = kids.get(t.step) || [];
      if (cs.length === 1) { t = cs[0]; continue; }
      for (const c of cs) li.append(chain(c));
      break;
    }
    return ul;
  };
  const root = (kids.get(-1) || [])[0];
  $("tree").replaceChildren(root ? chain(root) : "");
}

function renderPreds() {
  const ul = $("preds");
  ul.replaceChildren();
  for (const p of V.predicates) {
    ul.append(el("li", { class: p.ok ? "ok" : "violated" }, el("b", {}, p.name), ": ", el("span", { class: "why" }, p.explanation)));
  }
}

// diff marks the tokens of b that are not in a and those of a not in b
// (an LCS over words and punctuation, after the common prefix and suffix).
function diff(a, b) {
  const tok = (s) => s.split(/(\s+|[{}()\[\],:=])/).filter((x) => x !== "");
  const x = tok(a), y = tok(b);
  let p = 0;
  while (p < x.length && p < y.length && x[p] === y[p]) p++;
  let s = 0;
  while (s < x.length - p && s < y.length - p && x[x.length - 1 - s] === y[y.length - 1 - s]) s++;
  const xm = x.slice(p, x.length - s), ym = y.slice(p, y.length - s);
  const out = [document.createTextNode(y.slice(0, p).join(""))];
  if (xm.length * ym.length > 250000) {
    out.push(el("del", {}, xm.join("")), el("ins", {}, ym.join("")));
  } else {
    const n = xm.length, m = ym.length;
    const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
      L[i][j] = xm[i] === ym[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && xm[i] === ym[j]) { out.push(document.createTextNode(ym[j])); i++; j++; }
      else if (i < n && (j === m || L[i + 1][j] >= L[i][j + 1])) { out.push(el("del", {}, xm[i])); i++; }
      else { out.push(el("ins", {}, ym[j])); j++; }
    }
  }
  out.push(document.createTextNode(y.slice(y.length - s).join("")));
  return out;
}

function renderNodes() {
  const box = $("nodes");
  box.replaceChildren();
  for (const n of V.nodes) {
    const d = el("div", { class: "desc" });
    if (n.changed) d.append(...diff(n.prev, n.desc)); else d.textContent = n.desc;
    box.append(el("div", { class: "node" + (n.changed ? " changed" : "") + (n.crashed ? " crashed" : ""), "data-addr": n.addr },
      el("span", { class: "addr" }, n.addr + (n.crashed ? " (crashed)" : "") + (n.changed ? " (changed)" : "")), d));
  }
}

function renderMessages() {
  $("sent").replaceChildren(...(V.sent || []).map((s) => el("li", { class: "desc" }, s)));
  const net = V.network || [];
  $("netcount").textContent = `(${net.reduce((a, m) => a + m.count, 0)})`;
  $("network").replaceChildren(...net.map((m) => el("tr", {}, el("td", {}, `${m.from} → ${m.to}`),
    el("td", { class: "desc" }, m.desc), el("td", {}, m.count > 1 ? `×${m.count}` : ""))));
  $("streams").replaceChildren(...(V.streams || []).map((q) => el("div", {}, el("b", {}, `${q.from} ⇒ ${q.to}`),
    el("ol", {}, ...q.msgs.map((m) => el("li", { class: "desc" }, m))))));
  $("timers").replaceChildren(...(V.timers || []).map((t) => el("tr", {}, el("td", {}, t.node),
    el("td", { class: "desc" }, t.desc), el("td", {}, `[${t.min}, ${t.max}]`), el("td", {}, t.ready ? "ready" : "waits"))));
  const b = V.budget;
  $("budget").textContent = `used: ${b.Drops} drops, ${b.Duplicates} duplicates, ${b.Crashes} crashes, ${b.Fires} timer firings, ` +
    `${b.Restarts} restarts, ${b.Partitions} partitions` + (V.cut ? `; ${V.cut}` : "");
}

async function search() {
  const b = $("search");
  if (b.disabled) return;
  b.disabled = true;
  b.textContent = "searching…";
  try {
    await call("POST", "api/search", { target: $("target").value, maxStates: +$("maxStates").value, maxSeconds: +$("maxSeconds").value });
  } finally {
    b.disabled = false;
    b.textContent = "search";
  }
}

$("home").onclick = () => goTo(V.path[0].step);
$("back").onclick = () => V.depth > 0 && goTo(V.path[V.path.length - 2].step);
$("fwd").onclick = () => V.forward >= 0 && goTo(V.forward);
$("end").onclick = () => goTo(V.end);
$("search").onclick = search;
$("load").onchange = async (ev) => {
  const f = ev.target.files[0];
  if (f) await call("POST", "api/load", await f.text());
  ev.target.value = "";
};
document.addEventListener("keydown", (ev) => {
  if (!V || ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const k = ev.key;
  if (k === "ArrowLeft") $("back").onclick();
  else if (k === "ArrowRight") $("fwd").onclick();
  else if (k === "Home") $("home").onclick();
  else if (k === "End") $("end").onclick();
  else if (k === "s") search();
  else if (k >= "1" && k <= "9" && V.events && +k <= V.events.length) take(+k - 1);
  else return;
  ev.preventDefault();
});
call("GET", "api/state");
