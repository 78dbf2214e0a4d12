// Overview: the index's documents, nodes and edges per kind, versions with their times,
// disk size, maintenance and writer state ({base}/stats), and the server's readiness (/readyz).
"use strict";
(() => {
  function card(title, ...body) { return el("section", { class: "card" }, el("h2", {}, title), ...body); }

  function facts(pairs) {
    return el("dl", { class: "facts" }, ...pairs.filter(([, v]) => v !== undefined && v !== null && v !== "").flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, String(v))]));
  }

  function counts(rows, caption) {
    const top = Math.max(1, ...rows.map(([, n]) => n));
    return el("table", { class: "counts" }, el("caption", { class: "sr-only" }, caption),
      el("tbody", {}, ...rows.map(([name, n, chip]) => {
        const bar = el("span", { class: "scorebar", "aria-hidden": "true" }, el("span", {}));
        bar.firstChild.style.width = (100 * n / top).toFixed(1) + "%";
        return el("tr", {}, el("th", { scope: "row" }, chip || name), el("td", { class: "num" }, n.toLocaleString()), el("td", { class: "wide" }, bar));
      })));
  }

  async function refresh() {
    if (!current() || $("view-overview").hidden) return;
    try {
      const [stats, ready] = await Promise.all([api(base() + "/stats"), fetch("/readyz").then((r) => r.json()).catch(() => ({ status: "unknown" }))]);
      const ix = stats.index, service = stats.service, ops = service.operations || {};
      const nodes = Object.entries(ix.nodes).map(([k, n]) => [k, n, el("span", {}, kindChip(k))]);
      const edges = Object.entries(ix.edges_by_kind || {}).map(([k, n]) => [(stats.kinds && stats.kinds.edges[k]) || "kind " + k, n]);
      const versions = (ix.versions || []).map((v) => el("tr", { class: v.version === ix.version ? "served" : null }, el("td", { class: "num" }, String(v.version)), el("td", {}, when(v.committed_at)),
        el("td", {}, v.version === ix.version ? el("span", { class: "badge succeeded" }, "served") : null)));
      const policies = Object.entries(ix.maintenance || {}).map(([k, v]) => el("tr", {}, el("th", { scope: "row" }, k), el("td", {}, typeof v === "object" && v ? Object.entries(v).map(([a, b]) => a + " " + b).join(", ") : String(v))));
      $("overview").replaceChildren(
        card("Server", facts([["Readiness", ready.status + (ready.warmup && ready.warmup.level ? " (warm-up " + ready.warmup.level + ")" : "")],
          ["Up for", Math.round(service.uptime_seconds) + " s"], ["Requests in flight", service.in_flight + " of " + service.max_concurrency],
          ["Your rights", (current().rights || []).join(" and ") || "none"], ["Token required", service.auth ? "yes" : "no"]])),
        card("Index " + $("index").value, facts([["Version", ix.version], ["Committed", when(ix.committed_at)], ["Documents", ix.documents.toLocaleString()],
          ["Vectors", ix.vectors.toLocaleString()], ["Disk size", bytes(ix.size_bytes)], ["Hierarchy layers", ix.hierarchy_layers],
          ["Embedder", ix.embedder && ix.embedder.name], ["LLM", ix.llm], ["Modes", (ix.modes || []).join(", ")]])),
        card("Nodes per kind", counts(nodes, "nodes per kind")),
        card("Edges per kind (" + ix.edges.toLocaleString() + ")", counts(edges, "edges per kind")),
        card("Versions", versions.length ? el("table", { class: "counts", id: "versions" }, el("thead", {}, el("tr", {}, el("th", {}, "Version"), el("th", {}, "Committed"), el("th", {}, el("span", { class: "sr-only" }, "State")))), el("tbody", {}, ...versions)) : el("p", { class: "muted" }, "Compacted: only the current version is kept.")),
        card("Maintenance", facts([["Writer", ops.pending ? ops.pending + " operation(s) pending" : "idle"], ["Segments", Object.entries(ix.segments || {}).map(([k, n]) => k + " " + n).join(", ")]]),
          el("details", {}, el("summary", {}, "Fold and merge policies"), el("table", { class: "counts" }, el("tbody", {}, ...policies)))),
      );
    } catch (err) { status(err.message, true); }
  }

  GS.views.overview = { refresh, show: refresh, onIndex: refresh };
})();
