// Documents: upload (files to {base}/documents/upload, JSONL to {base}/documents), the jobs
// with their per-file outcomes, the paged and searchable list, one document, delete.
// Write controls exist only for a token with the write right.
"use strict";
(() => {
  const PAGE = 20;
  const JSONL = /\.(jsonl|ndjson)$/i;
  const own = new Map(); // operation id -> its latest body (the jobs this page started)
  let offset = 0;
  let total = 0;
  let polling = null;
  let listing = true; // false when the server has no document list route
  let listings = 0; // the latest listing asked for
  let opening = 0; // the latest document asked for

  // ---------------------------------------------------------------- upload
  async function upload(event) {
    event.preventDefault();
    const files = [...$("files").files];
    if (!files.length) { status("Choose one or more files first.", true); return; }
    let metadata = $("upload-metadata").value.trim();
    if (metadata) {
      try { if (typeof JSON.parse(metadata) !== "object" || Array.isArray(JSON.parse(metadata))) throw new Error(); }
      catch (err) { status("Metadata must be a JSON object, e.g. {\"team\": \"optics\"}.", true); return; }
    }
    const lines = files.filter((f) => JSONL.test(f.name));
    const others = files.filter((f) => !JSONL.test(f.name));
    $("upload-go").disabled = true;
    try {
      for (const file of lines) {
        const op = await api(base() + "/documents", { method: "POST", body: file, headers: { "Content-Type": "application/x-ndjson" } });
        track(op, file.name);
      }
      if (others.length) {
        const form = new FormData();
        for (const f of others) form.append("files", f, f.name);
        if (metadata) form.append("metadata", metadata);
        track(await api(base() + "/documents/upload", { method: "POST", body: form }));
      }
      $("files").value = "";
      status("Upload queued: " + files.map((f) => f.name).join(", "));
    } catch (err) {
      status("Upload failed: " + (err.status === 404 || err.status === 405 ? "this server has no file upload route" : err.message), true);
    } finally {
      $("upload-go").disabled = false;
    }
  }

  // ---------------------------------------------------------------- jobs
  // A job this page started; ``name`` stands for its file when the server lists none (a
  // JSONL file or a deletion), its outcome following the operation's.
  function track(op, name) {
    own.set(op.id, Object.assign(op, { name }));
    merge(op);
    showJobs();
    poll();
  }

  function merge(op) {
    const mine = own.get(op.id);
    if (!mine) return op;
    const merged = Object.assign(mine, op);
    if (mine.name && !(op.files && op.files.length)) merged.files = [{ name: mine.name, status: statusOf(op) }];
    return merged;
  }

  // "3 of 5 documents done" while it runs (the state map lists the first 100 documents;
  // document_count counts them all), then the count.
  function progress(op) {
    const docs = op.documents && typeof op.documents === "object" ? Object.values(op.documents) : [];
    const count = typeof op.document_count === "number" ? op.document_count : docs.length;
    const noun = count === 1 ? " document" : " documents";
    if (op.status !== "queued" && op.status !== "running") return count + noun;
    return docs.filter((s) => s !== "queued").length + " of " + count + noun + " done";
  }

  function jobItem(op) {
    const files = (op.files || []).map((f) => el("li", { class: "file " + f.status },
      el("span", { class: "badge " + f.status }, f.status), " " + f.name,
      f.format ? " · " + f.format : "", f.pages ? " · " + f.pages + (f.pages === 1 ? " page" : " pages") : "", f.doc_id ? " → " + f.doc_id : "", f.error ? el("span", { class: "error" }, " " + f.error) : null));
    const running = op.status === "queued" || op.status === "running";
    const bar = el("progress", { max: "1", "aria-label": "progress of " + op.id });
    if (!running) bar.value = 1;
    const cancel = op.status === "queued" && canWrite()
      ? el("button", { type: "button", class: "cancel", onclick: () => api(base() + "/operations/" + encodeURIComponent(op.id), { method: "DELETE" }).then(refreshJobs, (e) => status(e.message, true)) }, "Cancel") : null;
    const error = op.error ? el("p", { class: "error" }, op.error.code + ": " + op.error.message) : null;
    return el("li", { class: "job " + op.status, "data-op": op.id },
      el("div", { class: "head" }, el("span", { class: "badge " + op.status }, op.status), el("strong", {}, op.kind),
        el("span", { class: "muted" }, progress(op) + " · " + ago(op.submitted_at)), cancel),
      running ? bar : null, error, files.length ? el("ul", { class: "files plain" }, ...files) : null,
      yieldList(op.report && op.report.llm_yield));
  }

  // What each LLM stage's answers held (the write report's llm_yield; issue 50): a model whose
  // answers hold nothing shows here before its write fails on the index's yield floor.
  function yieldList(table) {
    const rows = Object.entries(table || {});
    if (!rows.length) return null;
    return el("ul", { class: "yield plain muted", "aria-label": "LLM yield per stage" }, ...rows.map(([task, y]) =>
      el("li", {}, task + ": " + (y.answers || 0) + " answers, " + (y.valid_json || 0) + " valid JSON, " +
        (y.empty || 0) + " empty" + (y.inputs ? "; " + (y.held || 0) + " of " + y.inputs + " inputs held " + (y.item || "an item") : ""))));
  }

  function showJobs(list) {
    const ops = list || [...own.values()].reverse();
    $("jobs").replaceChildren(...(ops.length ? ops.slice(0, 10).map(jobItem) : [el("li", { class: "muted" }, "No jobs yet.")]));
  }

  async function refreshJobs() {
    let ops;
    try {
      ops = (await api(base() + "/operations?limit=10")).operations.map(merge);
    } catch (err) {
      // Without the list route: the jobs this page started, one by one.
      for (const id of own.keys()) {
        const op = await api(base() + "/operations/" + encodeURIComponent(id)).catch(() => null);
        if (op) merge(op);
      }
    }
    showJobs(ops);
    return (ops || [...own.values()]).some((op) => op.status === "queued" || op.status === "running");
  }

  function statusOf(op) {
    if (op.status === "succeeded") return op.kind === "delete" ? "deleted" : "indexed";
    return op.status;
  }

  function poll() {
    if (polling) return;
    polling = setInterval(async () => {
      const busy = await refreshJobs().catch(() => false);
      if (!busy) {
        clearInterval(polling);
        polling = null;
        refreshList();
        if (GS.views.overview) GS.views.overview.refresh();
      }
    }, 700);
  }

  // ---------------------------------------------------------------- list
  // Only the latest listing is shown: a slower, older answer (a search typed while the list
  // refreshed after a job) never overwrites a newer one.
  async function refreshList() {
    const q = $("doc-q").value.trim();
    const table = $("doc-table");
    const body = table.tBodies[0];
    const mine = ++listings;
    table.setAttribute("aria-busy", "true");
    try {
      const page = await api(base() + "/documents?offset=" + offset + "&limit=" + PAGE + (q ? "&q=" + encodeURIComponent(q) : ""));
      if (mine !== listings) return;
      listing = true;
      total = page.total;
      body.replaceChildren(...page.documents.map(row));
      if (!page.documents.length) body.append(el("tr", {}, el("td", { colspan: "6", class: "muted" }, q ? "No document matches." : "No documents yet.")));
      $("page-info").textContent = total ? (offset + 1) + "–" + (offset + page.documents.length) + " of " + total : "";
    } catch (err) {
      if (mine !== listings) return;
      listing = false;
      body.replaceChildren(el("tr", {}, el("td", { colspan: "6", class: "muted" }, "This server does not list documents (" + err.message + "); open one by its id with the search box.")));
      $("page-info").textContent = "";
    }
    $("prev").disabled = offset === 0;
    $("next").disabled = offset + PAGE >= total;
    table.removeAttribute("aria-busy");
  }

  // A parsed file's format and pages; nothing for a document given as text (source null).
  function sourceWords(source, withName) {
    if (!source) return "";
    const pages = source.pages ? source.pages + (source.pages === 1 ? " page" : " pages") : "";
    return [withName ? source.filename : "", source.format, pages].filter(Boolean).join(" · ");
  }

  function row(doc) {
    const source = sourceWords(doc.source, false);
    return el("tr", { "data-doc": doc.doc_id },
      el("td", {}, el("button", { type: "button", class: "link open-doc", onclick: () => open(doc.doc_id) }, doc.title || doc.doc_id)),
      el("td", { class: "id" }, doc.doc_id),
      el("td", {}, el("span", { class: "badge " + doc.status }, doc.status)),
      el("td", {}, String(doc.chunks)),
      el("td", {}, source),
      el("td", {}, canWrite() ? deleteButton(doc.doc_id) : null));
  }

  function deleteButton(docId) {
    return el("button", { type: "button", class: "delete danger", "data-doc": docId, "aria-label": "Delete " + docId, onclick: () => remove(docId) }, "Delete");
  }

  async function remove(docId) {
    if (!window.confirm("Delete the document " + docId + " from the index?")) return;
    try {
      track(await api(documentPath(docId), { method: "DELETE" }), docId);
      $("doc-view").hidden = true;
      status("Deletion of " + docId + " queued");
    } catch (err) { status(err.message, true); }
  }

  // ---------------------------------------------------------------- one document
  // The view drops its data-doc while it loads, so that whoever waits for a document sees
  // the new rendering, never the previous one.
  async function open(docId) {
    showTab("documents");
    const view = $("doc-view");
    const mine = ++opening;
    view.removeAttribute("data-doc");
    view.setAttribute("aria-busy", "true");
    try {
      const [info, text] = await Promise.all([api(documentPath(docId)), api(textPath(docId)).catch(() => null)]);
      if (mine !== opening) return;
      const meta = Object.entries(info.metadata || {}).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, typeof v === "string" ? v : JSON.stringify(v))]);
      const facts = [["Id", docId], ["Status", info.status], ["Chunks", info.chunks], ["Version", info.version], ["Source", sourceWords(info.source, true)]]
        .filter(([, v]) => v !== undefined && v !== null && v !== "").flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, String(v))]);
      const chunks = text ? text.text.split("\n\n") : [];
      const cited = GS.views.ask.citing(docId).map((c) => el("li", {}, el("button", { type: "button", class: "link", onclick: c.goto }, "[" + c.marker + "] in “" + short(c.question, 80) + "”"), c.where ? " · " + c.where : null));
      const chunkItems = (text && text.chunk_ids ? text.chunk_ids : []).map((id, i) => el("li", {}, el("button", { type: "button", class: "link", onclick: () => GS.views.explore.open(id) }, "chunk " + (i + 1)), " " + short(chunks[i] || "", 90)));
      const parts = [
        el("div", { class: "head" }, el("h2", {}, info.title || docId), canWrite() ? deleteButton(docId) : null,
          el("button", { type: "button", onclick: () => { view.hidden = true; } }, "Close")),
        el("dl", { class: "facts" }, ...facts),
        meta.length ? el("h3", {}, "Metadata") : null, meta.length ? el("dl", { class: "facts" }, ...meta) : null,
        el("h3", {}, "Cited in this session"), cited.length ? el("ul", { class: "cited-in" }, ...cited) : el("p", { class: "muted" }, "Not cited by an answer yet."),
        chunkItems.length ? el("details", {}, el("summary", {}, chunkItems.length + (chunkItems.length === 1 ? " chunk" : " chunks") + " (open one in Explore)"), el("ol", { class: "plain" }, ...chunkItems)) : null,
        el("h3", {}, "Text"), el("pre", { id: "doc-text", "data-doc": docId }, text ? text.text : "(no text)")];
      // replaceChildren would write a null as the text "null": absent parts are left out.
      view.replaceChildren(...parts.filter((p) => p !== null));
      view.hidden = false;
      view.setAttribute("data-doc", docId);
      view.focus();
      view.scrollIntoView({ block: "start" });
    } catch (err) {
      if (mine === opening) status(err.message, true);
    } finally {
      if (mine === opening) view.removeAttribute("aria-busy");
    }
  }

  $("upload").addEventListener("submit", upload);
  $("doc-search").addEventListener("submit", async (event) => {
    event.preventDefault();
    offset = 0;
    await refreshList();
    const q = $("doc-q").value.trim();
    if (!listing && q) open(q);
  });
  $("prev").addEventListener("click", () => { offset = Math.max(0, offset - PAGE); refreshList(); });
  $("next").addEventListener("click", () => { offset += PAGE; refreshList(); });

  GS.views.documents = {
    open,
    show() { if (current()) refreshList(); },
    onIndex() {
      $("upload").hidden = !canWrite();
      offset = 0;
      if (!$("view-documents").hidden) refreshList();
      refreshJobs().then((busy) => { if (busy) poll(); }, () => {});
    },
  };
})();
