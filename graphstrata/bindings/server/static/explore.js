// Explore: a node's neighbourhood ({base}/nodes/{id}/neighbourhood) drawn as labelled rings
// (colour = kind, legend below), zoom and pan, click (or Enter) through to a neighbour, a
// community's members, a chunk's hierarchy path; after a graph-mode question, the walk's
// entry points and edges. The search box finds entities and communities ({base}/nodes?q=).
"use strict";
(() => {
  const W = 900, H = 700, CX = 450, CY = 350;
  const WALK = "#d06a00", ENTRY = "#d4a000", UP = "#7651b5";
  const MEMBER_EDGES = "&kind=5&kind=6"; // EdgeKind ELEMENT_MEMBER, ELEMENT_TITLE
  let view = { x: 0, y: 0, w: W, h: H };
  let shownId = null;
  let opening = 0; // the latest open(): an older answer that comes later is dropped

  function setView(v) {
    view = v;
    $("graph").setAttribute("viewBox", [v.x, v.y, v.w, v.h].map((n) => n.toFixed(1)).join(" "));
  }

  function zoom(factor, px, py) {
    const w = Math.min(W * 4, Math.max(W / 8, view.w * factor));
    const h = w * H / W;
    const fx = px === undefined ? 0.5 : px, fy = py === undefined ? 0.5 : py;
    setView({ x: view.x + (view.w - w) * fx, y: view.y + (view.h - h) * fy, w, h });
  }

  function pan(dx, dy) { setView({ x: view.x + dx * view.w, y: view.y + dy * view.h, w: view.w, h: view.h }); }

  // ---------------------------------------------------------------- search
  async function find(event) {
    event.preventDefault();
    const q = $("entity-q").value.trim();
    if (!q) return;
    $("entity-hits").replaceChildren(el("li", { class: "muted" }, "Searching…"));
    try {
      const found = (await api(base() + "/nodes?q=" + encodeURIComponent(q) + "&limit=12")).nodes;
      $("entity-hits").replaceChildren(...(found.length ? found.map((n) => el("li", {}, el("button", { type: "button", class: "chip", "data-node": n.id, onclick: () => open(n.id) }, kindChip(n.kind), " " + n.label))) : [el("li", { class: "muted" }, "Nothing named like “" + q + "”.")]));
      if (found.length) open(found[0].id);
    } catch (err) { status(err.message, true); }
  }

  // ---------------------------------------------------------------- one node
  async function open(nodeId, members) {
    showTab("explore");
    let path = nodePath(nodeId) + "/neighbourhood?limit=24" + (members ? MEMBER_EDGES : "");
    const walk = GS.lastGraph;
    if (walk && walk.index === $("index").value && !members) {
      path += "&query=" + encodeURIComponent(walk.query);
      if (walk.budget) path += "&budget_tokens=" + walk.budget;
      if (walk.params && Object.keys(walk.params).length) path += "&params=" + encodeURIComponent(JSON.stringify(walk.params));
    }
    const ticket = ++opening;
    try {
      const hood = await api(path);
      if (ticket !== opening) return;
      if (shownId !== hood.node.id) setView({ x: 0, y: 0, w: W, h: H });
      shownId = hood.node.id;
      showDetail(hood, members);
      draw(hood);
      showNeighbours(hood);
      status("Neighbourhood of “" + hood.node.label + "”: " + hood.neighbours.length + " neighbours");
    } catch (err) { status(err.message, true); }
  }

  function nodeButton(m, text) {
    return el("button", { type: "button", class: "link", "data-node": m.id, onclick: () => open(m.id) }, text || m.label);
  }

  function showDetail(hood, members) {
    const n = hood.node;
    const parts = [el("h2", { id: "node-title" }, kindChip(n.kind), " " + n.label),
      el("p", { class: "muted" }, kindWord(n.kind) + " · node " + n.id + " · layer " + n.layer + " · " + hood.edges.length + " edges shown")];
    if (hood.chain.length || n.kind === "T" || n.kind === "L") {
      const path = [el("span", { class: "step here" }, "layer " + n.layer + ": " + n.label)];
      for (const c of hood.chain) path.push(" → ", el("span", { class: "step" }, "layer " + c.layer + ": ", nodeButton(c)));
      parts.push(el("div", { class: "hierarchy", id: "hierarchy" }, el("strong", {}, "Hierarchy path "), ...path));
    }
    const communities = hood.neighbours.filter((m) => m.kind === "H");
    if (n.kind === "H") {
      parts.push(el("p", {}, members ? el("button", { type: "button", onclick: () => open(n.id) }, "Show all edges")
        : el("button", { type: "button", id: "members", onclick: () => open(n.id, true) }, "Show the community's members")));
    } else if (communities.length) {
      parts.push(el("p", {}, el("strong", {}, "Communities "), ...communities.flatMap((c) => [el("button", { type: "button", class: "chip", onclick: () => open(c.id, true) }, c.label), " "])));
    }
    if (hood.walk) {
      const w = hood.walk;
      parts.push(el("p", { class: "muted", id: "walk-line" }, "Graph walk of “" + w.query + "”: " + (w.retrieved ? "this node was retrieved" : "not retrieved") + "; " + w.entry_points.length + " entry points, " + w.edges.length + " walk edges drawn"));
    }
    parts.push(el("details", {}, el("summary", {}, "Text"), el("p", { class: "node-text" }, n.text)));
    if (n.docs.length) parts.push(el("p", {}, el("strong", {}, "Documents "), ...n.docs.slice(0, 8).flatMap((d) => [el("button", { type: "button", class: "chip", onclick: () => GS.views.documents.open(d) }, d), " "])));
    $("detail").replaceChildren(...parts);
  }

  function showNeighbours(hood) {
    const groups = new Map();
    for (const m of hood.neighbours) groups.set(m.kind, (groups.get(m.kind) || []).concat([m]));
    $("neighbours-title").hidden = !hood.neighbours.length;
    $("neighbours").replaceChildren(...[...groups].map(([kind, ms]) => el("li", {}, kindChip(kind), " ", ...ms.flatMap((m) => [nodeButton(m), " "]))));
  }

  function place(items, where, radius, offset) {
    items.forEach((m, i) => {
      const angle = offset + (2 * Math.PI * i) / Math.max(items.length, 1);
      where.set(m.id, { x: CX + radius * Math.cos(angle), y: CY + radius * Math.sin(angle), angle });
    });
  }

  function draw(hood) {
    const svg = $("graph");
    svg.replaceChildren();
    const walk = hood.walk || { entry_points: [], edges: [], nodes: [] };
    const where = new Map([[hood.node.id, { x: CX, y: CY, angle: Math.PI / 2 }]]);
    const inner = walk.nodes.length ? 125 : 150;
    place(hood.neighbours, where, inner, -Math.PI / 2);
    place(walk.nodes, where, 235, -Math.PI / 2 + Math.PI / Math.max(walk.nodes.length, 1));
    const parent = hood.chain[0];
    if (parent && !where.has(parent.id)) where.set(parent.id, { x: CX, y: 40, angle: -Math.PI / 2 });
    const defs = svgEl("defs");
    const marker = svgEl("marker", { id: "walk-arrow", viewBox: "0 0 10 10", refX: "19", refY: "5", markerWidth: "6", markerHeight: "6", orient: "auto-start-reverse" });
    marker.append(svgEl("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: WALK }));
    defs.append(marker);
    const edges = svgEl("g", { class: "edges" });
    svg.append(defs, edges);
    const line = (a, b, attrs, tip) => {
      const p = where.get(a), q = where.get(b);
      const l = svgEl("line", Object.assign({ x1: p.x, y1: p.y, x2: q.x, y2: q.y }, attrs));
      if (tip) l.append(svgEl("title", {}, tip));
      edges.append(l);
    };
    const key = (e) => Math.min(e.src, e.dst) + ":" + Math.max(e.src, e.dst);
    const walked = new Set(walk.edges.map(key));
    for (const e of hood.edges) {
      if (!where.has(e.src) || !where.has(e.dst) || walked.has(key(e))) continue;
      line(e.src, e.dst, { class: "edge", stroke: "#b9b9b9", "stroke-width": 1 }, (GS.kinds.edges[e.kind] || "edge") + " · weight " + e.weight);
    }
    if (parent) line(hood.node.id, parent.id, { class: "up", stroke: UP, "stroke-width": 2, "stroke-dasharray": "5 3" }, "hierarchy parent");
    const top = Math.max(...walk.edges.map((e) => e.flow), 1e-12);
    for (const e of walk.edges) {
      if (!where.has(e.src) || !where.has(e.dst)) continue;
      line(e.src, e.dst, { class: "walk", stroke: WALK, "stroke-width": (1.5 + 3.5 * e.flow / top).toFixed(2), "marker-end": "url(#walk-arrow)" }, "walk edge: flow " + e.flow.toExponential(2) + " (step " + e.level + " back)");
    }
    const entries = new Map(walk.entry_points.map((e) => [e.id, e]));
    const all = [[hood.node, "center"], ...hood.neighbours.map((m) => [m, "neighbour"]), ...walk.nodes.map((m) => [m, "walked"])];
    if (parent && !hood.neighbours.some((m) => m.id === parent.id)) all.push([parent, "parent"]);
    for (const [m, role] of all) drawNode(svg, m, role, where.get(m.id), entries.get(m.id), ringLabel(m, hood.node));
    legend(hood, all, Boolean(hood.walk));
  }

  // Around a node, a relationship's label leaves out the end that is that node.
  function ringLabel(m, center) {
    const end = " — " + center.label;
    if (m.kind !== "R") return m.label;
    if (m.label.startsWith(center.label + " — ")) return "…" + m.label.slice(center.label.length);
    return m.label.endsWith(end) ? m.label.slice(0, -center.label.length) + "…" : m.label;
  }

  function drawNode(svg, m, role, p, entry, text) {
    const r = role === "center" ? 15 : 9;
    const g = svgEl("g", { class: "node " + role + (entry ? " entry" : ""), "data-node": String(m.id), tabindex: role === "center" ? "-1" : "0", role: "button", "aria-label": kindWord(m.kind) + ": " + m.label });
    if (entry) g.append(svgEl("circle", { class: "entry-ring", cx: p.x, cy: p.y, r: r + 4, fill: "none", stroke: ENTRY, "stroke-width": 3 }));
    const c = svgEl("circle", { cx: p.x, cy: p.y, r, fill: COLORS[m.kind] || "#333", stroke: "#fff", "stroke-width": 1.5 });
    c.append(svgEl("title", {}, kindWord(m.kind) + " " + m.id + (entry ? " (walk entry point)" : "") + ": " + short(m.text, 200)));
    g.append(c);
    let label;
    if (role === "center" || role === "parent") {
      label = svgEl("text", { x: p.x, y: p.y + (role === "center" ? 32 : -14), "text-anchor": "middle", class: "label center-label" }, short(m.label, 40));
    } else {
      // Radial labels: they run outward from their node and never cross a neighbour's.
      const deg = (p.angle * 180) / Math.PI;
      const left = Math.cos(p.angle) < 0;
      const dx = (r + 4) * Math.cos(p.angle), dy = (r + 4) * Math.sin(p.angle);
      label = svgEl("text", { x: p.x + dx, y: p.y + dy, dy: "0.35em", "text-anchor": left ? "end" : "start", transform: "rotate(" + (left ? deg + 180 : deg).toFixed(1) + " " + (p.x + dx).toFixed(1) + " " + (p.y + dy).toFixed(1) + ")", class: "label" }, short(text, role === "walked" ? 14 : 24));
    }
    g.append(label);
    if (role !== "center") {
      g.addEventListener("click", () => open(m.id));
      g.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(m.id); } });
    }
    svg.append(g);
  }

  function legend(hood, all, withWalk) {
    const kinds = [...new Set(all.map(([m]) => m.kind))];
    const items = kinds.map((k) => {
      const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
      swatch.style.background = COLORS[k] || "#333";
      return el("li", { "data-kind": k }, swatch, kindWord(k));
    });
    const mark = (cls, text) => el("li", {}, el("span", { class: "mark " + cls, "aria-hidden": "true" }), text);
    items.push(mark("edge", "edge"));
    if (hood.chain.length) items.push(mark("up", "hierarchy parent"));
    if (withWalk) items.push(mark("walk", "walk edge (width = mass)"), mark("entry", "entry point"));
    $("legend").replaceChildren(...items);
  }

  // ---------------------------------------------------------------- zoom and pan
  const svg = $("graph");
  let drag = null;
  svg.addEventListener("wheel", (event) => {
    event.preventDefault();
    const box = svg.getBoundingClientRect();
    zoom(event.deltaY > 0 ? 1.15 : 1 / 1.15, (event.clientX - box.left) / box.width, (event.clientY - box.top) / box.height);
  }, { passive: false });
  svg.addEventListener("pointerdown", (event) => {
    if (event.target.closest("g.node")) return;
    drag = { x: event.clientX, y: event.clientY, view };
    svg.setPointerCapture(event.pointerId);
  });
  svg.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const box = svg.getBoundingClientRect();
    const scale = drag.view.w / box.width;
    setView({ x: drag.view.x - (event.clientX - drag.x) * scale, y: drag.view.y - (event.clientY - drag.y) * scale, w: drag.view.w, h: drag.view.h });
  });
  svg.addEventListener("pointerup", () => { drag = null; });
  svg.addEventListener("keydown", (event) => {
    if (event.target !== svg) return;
    const moves = { ArrowLeft: [-0.1, 0], ArrowRight: [0.1, 0], ArrowUp: [0, -0.1], ArrowDown: [0, 0.1] };
    if (moves[event.key]) pan(...moves[event.key]);
    else if (event.key === "+" || event.key === "=") zoom(1 / 1.25);
    else if (event.key === "-") zoom(1.25);
    else return;
    event.preventDefault();
  });
  $("zoom-in").addEventListener("click", () => zoom(1 / 1.25));
  $("zoom-out").addEventListener("click", () => zoom(1.25));
  $("zoom-reset").addEventListener("click", () => setView({ x: 0, y: 0, w: W, h: H }));
  $("entity-search").addEventListener("submit", find);

  GS.views.explore = { open, onIndex() { shownId = null; } };
})();
