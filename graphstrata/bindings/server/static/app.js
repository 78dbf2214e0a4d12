// graphstrata web page: plain DOM + SVG, no framework, no build step.
"use strict";
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const COLORS = { T: "#4a7bb7", L: "#7a5bb7", S: "#4a9b6b", R: "#b7834a", A: "#b74a6b", H: "#6b6b6b", N: "#2a8a8a", O: "#999" };
let indexes = [];

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
    const doc = await api(base() + "/texts/" + docId.split("/").map(encodeURIComponent).join("/"));
    $("doc").textContent = doc.title ? doc.title + "\n\n" + doc.text : doc.text;
    $("doc").setAttribute("data-doc", docId);
  } catch (err) {
    status(err.message, true);
  }
}

async function openNode(nodeId) {
  try {
    const hood = await api(base() + "/nodes/" + nodeId + "/neighbourhood?limit=24");
    const n = hood.node;
    const chain = hood.chain.map((c) => c.kind + c.id + " (layer " + c.layer + ")").join(" → ");
    $("detail").replaceChildren(
      el("h3", {}, "Node " + n.id + " (" + n.kind + ", layer " + n.layer + ")"),
      el("p", { class: "meta" }, hood.edges.length + " edges, " + hood.neighbours.length + " neighbours" + (chain ? "; hierarchy: " + chain : "")),
    );
    drawGraph(hood);
  } catch (err) {
    status(err.message, true);
  }
}

function drawGraph(hood) {
  const svg = $("graph");
  svg.replaceChildren();
  const cx = 260, cy = 210, radius = 170;
  const where = new Map([[hood.node.id, [cx, cy]]]);
  hood.neighbours.forEach((m, i) => {
    const angle = (2 * Math.PI * i) / Math.max(hood.neighbours.length, 1);
    where.set(m.id, [cx + radius * Math.cos(angle), cy + radius * Math.sin(angle)]);
  });
  hood.chain.forEach((c) => where.set(c.id, [40, 24]));
  const line = (a, b, cls) => {
    const [x1, y1] = where.get(a), [x2, y2] = where.get(b);
    const l = document.createElementNS(SVG, "line");
    for (const [k, v] of Object.entries({ x1, y1, x2, y2, class: cls, stroke: cls === "up" ? "#7a5bb7" : "#aaa", "stroke-width": cls === "up" ? 2 : 1 })) l.setAttribute(k, v);
    svg.append(l);
  };
  for (const e of hood.edges) if (where.has(e.src) && where.has(e.dst)) line(e.src, e.dst, "edge");
  if (hood.chain.length) line(hood.node.id, hood.chain[0].id, "up");
  const all = [[hood.node, "center"], ...hood.neighbours.map((m) => [m, "neighbour"]), ...hood.chain.slice(0, 1).map((c) => [c, "parent"])];
  for (const [m, role] of all) {
    const [x, y] = where.get(m.id);
    const g = document.createElementNS(SVG, "g");
    g.setAttribute("class", "node " + role);
    g.setAttribute("data-node", String(m.id));
    const c = document.createElementNS(SVG, "circle");
    for (const [k, v] of Object.entries({ cx: x, cy: y, r: role === "center" ? 14 : 9, fill: COLORS[m.kind] || "#333" })) c.setAttribute(k, v);
    const title = document.createElementNS(SVG, "title");
    title.textContent = m.kind + m.id + ": " + m.text.slice(0, 120);
    const label = document.createElementNS(SVG, "text");
    label.setAttribute("x", x + 11);
    label.setAttribute("y", y + 4);
    label.textContent = m.kind + m.id;
    c.append(title);
    g.append(c, label);
    if (role !== "center") g.addEventListener("click", () => openNode(m.id));
    svg.append(g);
  }
}

$("token").value = sessionStorage.getItem("graphstrata-token") || "";
$("token").addEventListener("change", () => { sessionStorage.setItem("graphstrata-token", token()); loadIndexes(); });
$("index").addEventListener("change", () => { showModes(); showStats(); });
$("ask").addEventListener("submit", search);
loadIndexes();
