// graphstrata web page: plain DOM + SVG, no framework, no build step.
"use strict";
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const COLORS = { T: "#4a7bb7", L: "#7a5bb7", S: "#4a9b6b", R: "#b7834a", A: "#b74a6b", H: "#6b6b6b", N: "#2a8a8a", O: "#999" };
const WALK = "#e07b00", ENTRY = "#d4a000";
let indexes = [];
// The last graph query: a node's neighbourhood then shows that query's walk around it.
let lastGraph = null;

function token() { return $("token").value.trim(); }
function base() { return "/v1/indexes/" + encodeURIComponent($("index").value); }
function status(text, error) { $("status").textContent = text; $("status").className = error ? "error" : ""; }

async function api(path, options) {
  const headers = Object.assign({ "Content-Type": "application/json" }, (options || {}).headers);
  if (token()) headers.Authorization = "Bearer " + token();
  const response = await fetch(path, Object.assign({}, options, { headers }));
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = body.error ? body.error.code + ": " + body.error.message : response.statusText;
    throw new Error(response.status + " " + message);
  }
  return body;
}

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

async function loadIndexes() {
  try {
    const body = await api("/v1/indexes");
    indexes = body.indexes;
    const select = $("index");
    select.replaceChildren(...indexes.map((ix) => el("option", { value: ix.name }, ix.name)));
    showModes();
    showStats();
    status(indexes.length + " index(es) served");
  } catch (err) {
    status("Could not list indexes (" + err.message + "); set the token.", true);
  }
}

function current() { return indexes.find((ix) => ix.name === $("index").value); }

function showModes() {
  const ix = current();
  if (!ix) return;
  const preferred = ix.modes.includes("hybrid") ? "hybrid" : "naive";
  $("mode").replaceChildren(...ix.modes.map((m) => el("option", m === preferred ? { value: m, selected: "" } : { value: m }, m)));
}

function showStats() {
  const ix = current();
  if (!ix) return;
  const s = ix.index;
  const kinds = Object.entries(s.nodes).map(([k, n]) => k + " " + n).join(", ");
  $("stats").replaceChildren(
    el("h3", {}, "Index " + ix.name),
    el("p", { id: "stats-line" }, "version " + s.version + " · " + s.documents + " documents · " + s.edges +
      " edges · " + s.vectors + " vectors · nodes: " + kinds + " · hierarchy layers " + s.hierarchy_layers),
  );
}

async function search(event) {
  event.preventDefault();
  const query = $("query").value.trim();
  if (!query) return;
  const body = { query, mode: $("mode").value, budget_tokens: Number($("budget").value) || undefined };
  const route = $("with-answer").checked ? "/answer" : "/retrieve";
  status("Searching…");
  try {
    const result = await api(base() + route, { method: "POST", body: JSON.stringify(body) });
    lastGraph = body.mode === "graph" ? { query, budget: body.budget_tokens, index: $("index").value } : null;
    $("answer").textContent = result.answer ? "Answer: " + result.answer : "";
    showResults(result.nodes);
    const r = result.report;
    status(result.nodes.length + " results, " + (r.tokens || 0) + " tokens (" + body.mode + ")");
  } catch (err) {
    status(err.message, true);
  }
}

function showResults(nodes) {
  const list = $("results");
  list.replaceChildren();
  for (const node of nodes) {
    const item = el("li", { class: "result", "data-node": String(node.id) });
    const meta = el("div", { class: "meta" });
    meta.append(el("span", { class: "kind kind-" + node.kind, title: "kind" }, node.kind), " ");
    meta.append(el("span", { class: "score" }, "score " + node.score.toFixed(3)), " · ");
    meta.append(el("span", { class: "tokens" }, node.tokens + " tokens"), " · layer " + node.layer + " · ");
    for (const doc of node.docs) {
      const cite = el("button", { class: "citation", type: "button", "data-doc": doc }, doc);
      cite.addEventListener("click", () => openDocument(doc));
      meta.append(cite);
    }
    const hood = el("button", { class: "hood", type: "button" }, "neighbourhood");
    hood.addEventListener("click", () => openNode(node.id));
    meta.append(hood);
    item.append(meta, el("div", { class: "text" }, node.text.length > 400 ? node.text.slice(0, 400) + "…" : node.text));
    list.append(item);
  }
}

async function openDocument(docId) {
  try {
    const doc = await api(base() + "/texts/" + encodeURIComponent(docId));
    $("doc").textContent = doc.title ? doc.title + "\n\n" + doc.text : doc.text;
    $("doc").setAttribute("data-doc", docId);
  } catch (err) {
    status(err.message, true);
  }
}

async function openNode(nodeId) {
  try {
    let path = base() + "/nodes/" + encodeURIComponent(nodeId) + "/neighbourhood?limit=24";
    if (lastGraph && lastGraph.index === $("index").value) {
      path += "&query=" + encodeURIComponent(lastGraph.query);
      if (lastGraph.budget) path += "&budget_tokens=" + lastGraph.budget;
    }
    const hood = await api(path);
    const n = hood.node;
    const chain = hood.chain.map((c) => c.kind + c.id + " (layer " + c.layer + ")").join(" → ");
    const detail = [
      el("h3", {}, "Node " + n.id + " (" + n.kind + ", layer " + n.layer + ")"),
      el("p", { class: "meta" }, hood.edges.length + " edges, " + hood.neighbours.length + " neighbours" + (chain ? "; hierarchy: " + chain : "")),
    ];
    if (hood.walk) detail.push(walkSummary(hood));
    $("detail").replaceChildren(...detail);
    drawGraph(hood);
  } catch (err) {
    status(err.message, true);
  }
}

function walkSummary(hood) {
  const w = hood.walk;
  const drawn = new Set([hood.node.id, ...hood.neighbours.map((m) => m.id), ...w.nodes.map((m) => m.id)]);
  const shown = w.entry_points.filter((e) => drawn.has(e.id));
  const names = shown.slice(0, 8).map((e) => e.kind + e.id + " (" + e.match.join("+") + ")").join(", ");
  const state = w.retrieved ? "retrieved, score " + w.score.toFixed(4) : "not retrieved";
  return el("p", { class: "meta", id: "walk-line" }, "Graph walk of “" + w.query + "” (" + state + "): " + w.entry_points.length +
    " entry points, " + shown.length + " drawn" + (names ? ": " + names : "") + "; " + w.edges.length + " walk edges");
}

function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function ring(items, where, cx, cy, radius, offset) {
  items.forEach((m, i) => {
    const angle = offset + (2 * Math.PI * i) / Math.max(items.length, 1);
    where.set(m.id, [cx + radius * Math.cos(angle), cy + radius * Math.sin(angle)]);
  });
}

function drawGraph(hood) {
  const svg = $("graph");
  svg.replaceChildren();
  const walk = hood.walk || { entry_points: [], edges: [], nodes: [] };
  const cx = 280, cy = 215, inner = walk.nodes.length ? 115 : 170;
  const where = new Map([[hood.node.id, [cx, cy]]]);
  ring(hood.neighbours, where, cx, cy, inner, 0);
  ring(walk.nodes, where, cx, cy, 185, Math.PI / Math.max(walk.nodes.length, 1));
  hood.chain.forEach((c) => where.set(c.id, [40, 24]));
  const defs = svgEl("defs");
  const marker = svgEl("marker", { id: "walk-arrow", viewBox: "0 0 10 10", refX: "19", refY: "5", markerWidth: "6", markerHeight: "6", orient: "auto-start-reverse" });
  marker.append(svgEl("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: WALK }));
  defs.append(marker);
  svg.append(defs);
  const line = (a, b, attrs, tip) => {
    const [x1, y1] = where.get(a), [x2, y2] = where.get(b);
    const l = svgEl("line", Object.assign({ x1, y1, x2, y2 }, attrs));
    if (tip) l.append(svgEl("title", {}, tip));
    svg.append(l);
  };
  const walked = new Set(walk.edges.map((e) => Math.min(e.src, e.dst) + ":" + Math.max(e.src, e.dst)));
  for (const e of hood.edges) {
    if (!where.has(e.src) || !where.has(e.dst) || walked.has(Math.min(e.src, e.dst) + ":" + Math.max(e.src, e.dst))) continue;
    line(e.src, e.dst, { class: "edge", stroke: "#bbb", "stroke-width": 1 });
  }
  if (hood.chain.length) line(hood.node.id, hood.chain[0].id, { class: "up", stroke: "#7a5bb7", "stroke-width": 2 });
  const top = Math.max(...walk.edges.map((e) => e.flow), 1e-12);
  for (const e of walk.edges) {
    if (!where.has(e.src) || !where.has(e.dst)) continue;
    line(e.src, e.dst, { class: "walk", stroke: WALK, "stroke-width": (1.5 + 3.5 * e.flow / top).toFixed(2), "marker-end": "url(#walk-arrow)", "data-level": e.level },
      "walk edge " + e.src + " → " + e.dst + ": flow " + e.flow.toExponential(2) + " (step " + e.level + " back)");
  }
  const entries = new Map(walk.entry_points.map((e) => [e.id, e]));
  const all = [[hood.node, "center"], ...hood.neighbours.map((m) => [m, "neighbour"]), ...walk.nodes.map((m) => [m, "walked"]), ...hood.chain.slice(0, 1).map((c) => [c, "parent"])];
  for (const [m, role] of all) {
    const [x, y] = where.get(m.id);
    const entry = entries.get(m.id);
    const g = svgEl("g", { class: "node " + role + (entry ? " entry" : ""), "data-node": String(m.id) });
    const r = role === "center" ? 14 : 9;
    if (entry) g.append(svgEl("circle", { class: "entry-ring", cx: x, cy: y, r: r + 4, fill: "none", stroke: ENTRY, "stroke-width": 3 }));
    const c = svgEl("circle", { cx: x, cy: y, r, fill: COLORS[m.kind] || "#333" });
    c.append(svgEl("title", {}, m.kind + m.id + (entry ? " [entry point: " + entry.match.join(", ") + ", weight " + entry.weight.toFixed(4) + "]" : "") + ": " + m.text.slice(0, 120)));
    g.append(c, svgEl("text", { x: x + 11, y: y + 4 }, m.kind + m.id));
    if (role !== "center") g.addEventListener("click", () => openNode(m.id));
    svg.append(g);
  }
  drawLegend(svg, Boolean(hood.walk));
}

function drawLegend(svg, withWalk) {
  const g = svgEl("g", { id: "graph-legend", transform: "translate(10, 420)" });
  const items = [["edge", "edge"], ["up", "hierarchy parent"]];
  if (withWalk) items.unshift(["walk", "walk edge (width = mass)"], ["entry", "entry point"]);
  let x = 0;
  for (const [kind, text] of items) {
    if (kind === "entry") g.append(svgEl("circle", { cx: x + 8, cy: 0, r: 6, fill: "#ccc", stroke: ENTRY, "stroke-width": 3 }));
    else g.append(svgEl("line", { x1: x, y1: 0, x2: x + 18, y2: 0, stroke: kind === "walk" ? WALK : kind === "up" ? "#7a5bb7" : "#bbb", "stroke-width": kind === "walk" ? 3 : kind === "up" ? 2 : 1 }));
    g.append(svgEl("text", { x: x + 22, y: 4, class: "legend-text" }, text));
    x += 30 + 6 * text.length;
  }
  svg.append(g);
}

$("token").value = sessionStorage.getItem("graphstrata-token") || "";
$("token").addEventListener("change", () => { sessionStorage.setItem("graphstrata-token", token()); loadIndexes(); });
$("index").addEventListener("change", () => { showModes(); showStats(); });
$("ask").addEventListener("submit", search);
loadIndexes();
