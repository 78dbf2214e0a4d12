// Ask: a conversation. The first question goes to {base}/answer?stream=true (the mode's
// parameters as edited); a follow-up goes to /v1/chat/completions with the conversation so
// far (stream: true) and its evidence is the retrieval of the same question. Answers stream;
// their [n] markers scroll to and highlight the cited result.
"use strict";
(() => {
  const params = {}; // mode -> its parameters' JSON schema properties (from /openapi.json)
  const turns = []; // {question, answer, nodes, citations, el, list, box}
  const titles = new Map(); // doc id -> title (or a pending promise)
  const MARKERS = /\[(\d+(?:\s*,\s*\d+)*)\]/g;

  async function loadParams() {
    try {
      const schema = await (await fetch("/openapi.json")).json();
      for (const rule of schema.components.schemas.RetrieveRequest.allOf || []) {
        const mode = rule.if && rule.if.properties.mode.const;
        const then = rule.then && rule.then.properties.params;
        if (mode) params[mode] = (then && then.properties) || {};
      }
    } catch (err) { /* no parameter editor: the defaults apply */ }
    showParams();
  }

  function spec(prop) {
    const alts = (prop.anyOf || [prop]).filter((p) => p.type !== "null");
    return Object.assign({ description: prop.description || "" }, alts[0] || {});
  }

  function range(s) {
    const low = s.minimum !== undefined ? "≥ " + s.minimum : s.exclusiveMinimum !== undefined ? "> " + s.exclusiveMinimum : "";
    const high = s.maximum !== undefined ? "≤ " + s.maximum : s.exclusiveMaximum !== undefined ? "< " + s.exclusiveMaximum : "";
    return [low, high].filter(Boolean).join(", ");
  }

  function showParams() {
    const mode = $("mode").value;
    $("params-mode").textContent = mode || "the mode";
    const fields = Object.entries(params[mode] || {}).map(([name, prop]) => {
      const s = spec(prop);
      const id = "param-" + name;
      let input;
      if (s.enum || s.type === "boolean") {
        const values = s.enum || ["true", "false"];
        input = el("select", { id, "data-type": s.type }, el("option", { value: "" }, "default"), ...values.map((v) => el("option", { value: String(v) }, String(v))));
      } else {
        input = el("input", { id, type: "number", "data-type": s.type, step: s.type === "integer" ? "1" : "any", min: s.minimum, max: s.maximum, placeholder: "default", inputmode: "decimal" });
      }
      const limits = range(s);
      return el("div", { class: "field" }, el("label", { for: id }, name), input,
        el("small", { id: id + "-help" }, short(s.description, 160) + (limits ? " Range: " + limits + "." : "")));
    });
    $("params").replaceChildren(...(fields.length ? fields : [el("p", { class: "muted" }, "This mode has no parameters.")]));
  }

  function paramValues() {
    const out = {};
    for (const input of $("params").querySelectorAll("input, select")) {
      if (input.value === "") continue;
      const type = input.getAttribute("data-type");
      out[input.id.slice(6)] = type === "boolean" ? input.value === "true" : type === "integer" || type === "number" ? Number(input.value) : input.value;
    }
    return out;
  }

  // ---------------------------------------------------------------- a turn
  function newTurn(question, mode, followUp) {
    for (const t of turns) t.box.open = false;
    const answer = el("div", { class: "answer", hidden: true });
    const list = el("ol", { class: "results plain" });
    const summary = el("summary", {}, "Results");
    const box = el("details", { class: "evidence", open: true }, summary, list);
    const meta = el("p", { class: "muted" }, mode + (followUp ? " · follow-up (the conversation so far goes with it)" : ""));
    const article = el("article", { class: "turn" }, el("h3", { class: "question" }, question), meta, answer, box);
    $("conversation").append(article);
    const turn = { question, answer: "", nodes: [], citations: [], el: article, answerEl: answer, list, box, summary, meta };
    turns.push(turn);
    return turn;
  }

  function renderAnswer(turn, text, citations) {
    turn.answer = text;
    turn.answerEl.hidden = !text;
    const parts = [];
    let last = 0;
    for (const m of text.matchAll(MARKERS)) {
      parts.push(text.slice(last, m.index));
      for (const n of m[1].split(",").map((x) => Number(x.trim()))) {
        const cited = (citations || []).find((c) => c.marker === n);
        parts.push(el("button", { type: "button", class: "marker", "data-marker": n, "aria-label": "Go to source " + n + (cited && cited.doc_id ? " (" + cited.doc_id + ")" : ""), onclick: () => goTo(turn, n) }, "[" + n + "]"));
      }
      last = m.index + m[0].length;
    }
    parts.push(text.slice(last));
    turn.answerEl.replaceChildren(el("span", { class: "label" }, "Answer "), ...parts);
  }

  function goTo(turn, n) {
    const cited = turn.citations.find((c) => c.marker === n);
    const item = (cited && turn.list.querySelector('li[data-node="' + cited.node_id + '"]')) || turn.list.querySelector('li[data-rank="' + n + '"]');
    if (!item) { status("Source [" + n + "] is not among the results.", true); return; }
    turn.box.open = true;
    for (const old of document.querySelectorAll("li.result.cited")) old.classList.remove("cited");
    item.classList.add("cited");
    item.scrollIntoView({ block: "center" });
    item.focus({ preventScroll: true });
  }

  function where(node) {
    const spans = node.spans || [];
    const pages = [...new Set(spans.map((s) => s.page).filter((p) => p !== null && p !== undefined))];
    const sections = [...new Set(spans.map((s) => s.section).filter(Boolean))];
    const out = [];
    if (pages.length) out.push((pages.length > 1 ? "pp. " : "p. ") + pages.slice(0, 4).join(", "));
    if (sections.length) out.push("§ " + short(sections[0], 60));
    return out.join(" · ");
  }

  function title(docId, known) {
    if (known) titles.set(docId, known);
    const span = el("span", { class: "doc-title", "data-doc": docId }, titles.has(docId) && typeof titles.get(docId) === "string" ? titles.get(docId) || docId : docId);
    if (!titles.has(docId)) {
      titles.set(docId, api(documentPath(docId)).then((d) => {
        titles.set(docId, d.title || "");
        for (const s of document.querySelectorAll("span.doc-title")) if (s.getAttribute("data-doc") === docId) s.textContent = d.title || docId;
      }, () => titles.set(docId, "")));
    }
    return span;
  }

  function resultItem(node, rank, top, citations) {
    const docs = node.docs || [];
    const known = new Map((node.documents || []).map((d) => [d.doc_id, d.title]));
    for (const c of citations) if (c.node_id === node.id && c.title) known.set(c.doc_id, c.title);
    const relative = top > 0 ? Math.max(0, node.score / top) : 0;
    const bar = el("span", { class: "scorebar", "aria-hidden": "true" }, el("span", {}));
    bar.firstChild.style.width = (100 * relative).toFixed(1) + "%";
    const text = node.text || "";
    const body = el("p", { class: "text" }, short(text, 360));
    const actions = el("div", { class: "actions" });
    if (text.length > 360) {
      actions.append(el("button", { type: "button", "aria-expanded": "false", onclick: (event) => {
        const open = event.target.getAttribute("aria-expanded") !== "true";
        body.textContent = open ? text : short(text, 360);
        event.target.setAttribute("aria-expanded", String(open));
        event.target.textContent = open ? "Less" : "Full text";
      } }, "Full text"));
    }
    for (const doc of docs.slice(0, 4)) {
      actions.append(el("button", { type: "button", class: "open-doc", "data-doc": doc, onclick: () => GS.views.documents.open(doc) }, "Open ", title(doc, known.get(doc))));
    }
    actions.append(el("button", { type: "button", class: "hood", onclick: () => GS.views.explore.open(node.id) }, "Explore"));
    const place = where(node);
    return el("li", { class: "result", tabindex: "-1", "data-rank": rank, "data-node": node.id },
      el("div", { class: "head" }, el("span", { class: "rank" }, "[" + rank + "]"), kindChip(node.kind),
        docs.length ? title(docs[0], known.get(docs[0])) : el("span", { class: "muted" }, "no document"),
        place ? el("span", { class: "where" }, place) : null),
      el("div", { class: "scoreline", title: "score " + node.score + " (rank " + rank + ")" }, bar,
        el("span", { class: "score" }, Math.round(100 * relative) + "% of the top score"), el("span", { class: "tokens muted" }, node.tokens + " tokens")),
      body, actions);
  }

  function finish(turn, nodes, answer, citations, report) {
    turn.nodes = nodes || [];
    turn.citations = citations || [];
    const top = Math.max(0, ...turn.nodes.map((n) => n.score));
    turn.list.replaceChildren(...turn.nodes.map((n, i) => resultItem(n, i + 1, top, turn.citations)));
    turn.summary.textContent = turn.nodes.length + " results" + (report && report.tokens ? " · " + report.tokens + " tokens" : "");
    if (answer !== null && answer !== undefined) renderAnswer(turn, answer, turn.citations);
    status(turn.nodes.length + " results for “" + short(turn.question, 60) + "”");
  }

  async function failed(response) {
    const body = await response.json().catch(() => ({}));
    return new ApiError(response.status, response.status + " " + (body.error ? body.error.code + ": " + body.error.message : response.statusText), body);
  }

  async function answerTurn(turn, body) {
    const response = await send(base() + "/answer?stream=true", { method: "POST", body: JSON.stringify(body) });
    if (!response.ok) throw await failed(response);
    let text = "";
    for await (const event of events(response)) {
      if (event.delta !== undefined) { text += event.delta; renderAnswer(turn, text, []); }
      if (event.done) finish(turn, event.nodes, event.answer || text, event.citations, event.report);
    }
  }

  async function chatTurn(turn, body) {
    const messages = [];
    for (const t of turns) {
      if (t === turn || !t.answer) continue;
      messages.push({ role: "user", content: t.question }, { role: "assistant", content: t.answer });
    }
    messages.push({ role: "user", content: body.query });
    const chat = { model: $("index").value + ":" + body.mode, messages, stream: true, budget_tokens: body.budget_tokens };
    // The chat numbers the nodes of this same retrieval (mode defaults), in the same order.
    const evidence = api(base() + "/retrieve", { method: "POST", body: JSON.stringify({ query: body.query, mode: body.mode, budget_tokens: body.budget_tokens }) });
    const response = await send("/v1/chat/completions", { method: "POST", body: JSON.stringify(chat) });
    if (!response.ok) throw await failed(response);
    let text = "";
    let citations = [];
    for await (const chunk of events(response)) {
      const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
      if (delta && delta.content) { text += delta.content; renderAnswer(turn, text, []); }
      if (chunk.citations) citations = chunk.citations;
    }
    const found = await evidence;
    finish(turn, found.nodes, text, citations, found.report);
  }

  async function ask(event) {
    event.preventDefault();
    const query = $("query").value.trim();
    if (!query) return;
    const mode = $("mode").value;
    const withAnswer = $("with-answer").checked;
    const followUp = withAnswer && turns.some((t) => t.answer);
    const body = { query, mode, budget_tokens: Number($("budget").value) || undefined };
    if (!followUp) body.params = paramValues();
    const turn = newTurn(query, mode, followUp);
    $("query").value = "";
    $("go").disabled = true;
    status("Asking…");
    try {
      if (!withAnswer) {
        const r = await api(base() + "/retrieve", { method: "POST", body: JSON.stringify(body) });
        finish(turn, r.nodes, null, [], r.report);
      } else if (followUp) await chatTurn(turn, body);
      else await answerTurn(turn, body);
      GS.lastGraph = mode === "graph" ? { query, budget: body.budget_tokens, index: $("index").value, params: body.params } : null;
    } catch (err) {
      turn.answerEl.hidden = false;
      turn.answerEl.replaceChildren(el("span", { class: "error" }, err.message));
      status(err.message, true);
    } finally {
      $("go").disabled = false;
    }
  }

  // Where the session's answers cite a document: [{question, marker, where, goto}].
  function citing(docId) {
    const out = [];
    for (const t of turns) {
      for (const c of t.citations) {
        if (c.doc_id === docId && t.answer.includes("[" + c.marker)) out.push({ question: t.question, marker: c.marker, where: where(c), goto: () => { showTab("ask"); goTo(t, c.marker); } });
      }
    }
    return out;
  }

  $("ask").addEventListener("submit", ask);
  $("mode").addEventListener("change", showParams);
  $("new-chat").addEventListener("click", () => { turns.length = 0; $("conversation").replaceChildren(); $("query").focus(); });

  GS.views.ask = {
    citing,
    onIndex(ix) {
      if (!ix) return;
      const chosen = $("mode").value;
      const preferred = ix.modes.includes(chosen) ? chosen : ix.modes.includes("hybrid") ? "hybrid" : ix.modes[0];
      $("mode").replaceChildren(...ix.modes.map((m) => el("option", { value: m, selected: m === preferred }, m)));
      showParams();
    },
  };
  loadParams();
})();
