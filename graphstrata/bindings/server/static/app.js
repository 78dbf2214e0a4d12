// graphstrata web page: plain DOM + SVG, no framework, no build step (decision 0028).
// app.js is the core: the token, the API calls, the index list, the tabs. The views
// (ask.js, documents.js, explore.js, overview.js) register in GS.views.
"use strict";
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const TOKEN_KEY = "graphstrata-token";
const COLORS = { T: "#3b6fb0", L: "#7651b5", S: "#2f8a5b", R: "#a8702d", A: "#b23f66", H: "#5d5d5d", N: "#1d7f80", O: "#8a8a8a" };
const NODE_WORDS = { T: "chunk", S: "semantic unit", N: "entity", R: "relationship", A: "attribute", H: "high-level element", O: "title", L: "summary" };

const GS = {
  views: {},
  indexes: [],
  kinds: { nodes: NODE_WORDS, edges: {} },
  token: sessionStorage.getItem(TOKEN_KEY) || "",
  asking: null, // the pending token dialog (a promise), so it is asked once
};

class ApiError extends Error {
  constructor(status, message, body) { super(message); this.status = status; this.body = body; }
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function status(text, error) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}

function kindWord(letter) { return GS.kinds.nodes[letter] || NODE_WORDS[letter] || letter; }
function kindChip(letter) { return el("span", { class: "kind kind-" + letter, title: "node kind " + letter }, kindWord(letter)); }
function short(text, n) { text = String(text || ""); return text.length > n ? text.slice(0, n - 1) + "…" : text; }

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

function ago(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.max(0, Date.now() / 1000 - seconds);
  const [n, unit] = s < 60 ? [s, "s"] : s < 3600 ? [s / 60, "min"] : s < 86400 ? [s / 3600, "h"] : [s / 86400, "d"];
  return Math.round(n) + " " + unit + " ago";
}

function when(seconds) { return seconds ? new Date(seconds * 1000).toLocaleString() + " (" + ago(seconds) + ")" : "—"; }

// ------------------------------------------------------------------ API calls
function base() { return "/v1/indexes/" + encodeURIComponent($("index").value); }
function current() { return GS.indexes.find((ix) => ix.name === $("index").value); }
function canWrite() { const ix = current(); return Boolean(ix && (ix.rights || []).includes("write")); }
// A doc id or node id is one encoded path segment: "x/../../metrics" cannot climb routes.
function textPath(docId) { return base() + "/texts/" + encodeURIComponent(docId); }
function documentPath(docId) { return base() + "/documents/" + encodeURIComponent(docId); }
function nodePath(nodeId) { return base() + "/nodes/" + encodeURIComponent(nodeId); }

async function send(path, options) {
  const opts = Object.assign({}, options);
  const headers = Object.assign({}, opts.headers);
  if (typeof opts.body === "string") headers["Content-Type"] = headers["Content-Type"] || "application/json";
  if (GS.token) headers.Authorization = "Bearer " + GS.token;
  opts.headers = headers;
  const response = await fetch(path, opts);
  if (response.status === 401 && !opts.noDialog) {
    await askToken(GS.token ? "The server refused this token." : "");
    return send(path, options);
  }
  return response;
}

// A JSON API call: the body, or an ApiError with the server's message.
async function api(path, options) {
  const response = await send(path, options);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = body.error ? body.error.code + ": " + body.error.message : response.statusText;
    throw new ApiError(response.status, response.status + " " + message, body);
  }
  return body;
}

// Server-sent events of a streamed answer: each data line, parsed, until [DONE].
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
      if (data === "[DONE]") return;
      if (data) yield JSON.parse(data);
    }
  }
}

// ------------------------------------------------------------------ token dialog
function askToken(message) {
  if (GS.asking) return GS.asking;
  const dialog = $("token-dialog");
  $("token-error").textContent = message || "";
  $("token").value = GS.token;
  GS.asking = new Promise((resolve, reject) => {
    const done = (ok) => {
      GS.asking = null;
      dialog.close();
      if (ok) resolve(); else reject(new ApiError(401, "401 a token is needed", {}));
    };
    $("token-form").onsubmit = async (event) => {
      event.preventDefault();
      const candidate = $("token").value.trim();
      const probe = await fetch("/v1/indexes", { headers: { Authorization: "Bearer " + candidate } });
      if (probe.status === 401) { $("token-error").textContent = "The server refused this token."; return; }
      GS.token = candidate;
      sessionStorage.setItem(TOKEN_KEY, candidate);
      done(true);
    };
    $("token-cancel").onclick = () => done(false);
    dialog.oncancel = (event) => { event.preventDefault(); done(false); };
  });
  dialog.showModal();
  $("token").focus();
  return GS.asking;
}

$("token-forget").addEventListener("click", () => {
  GS.token = "";
  sessionStorage.removeItem(TOKEN_KEY);
  $("token").value = "";
  $("token-error").textContent = "Token forgotten.";
});
$("token-button").addEventListener("click", () => askToken("").then(loadIndexes, () => {}));

// ------------------------------------------------------------------ tabs
const TABS = ["ask", "documents", "explore", "overview"];

function showTab(name, focus) {
  for (const tab of TABS) {
    const on = tab === name;
    const button = $("tab-" + tab);
    button.setAttribute("aria-selected", String(on));
    button.tabIndex = on ? 0 : -1;
    $("view-" + tab).hidden = !on;
    if (on && focus) button.focus();
  }
  if (location.hash !== "#" + name) history.replaceState(null, "", "#" + name);
  status("");
  const view = GS.views[name];
  if (view && view.show) view.show();
}

$("tabs").addEventListener("click", (event) => {
  const view = event.target.getAttribute("data-view");
  if (view) showTab(view);
});
$("tabs").addEventListener("keydown", (event) => {
  const at = TABS.indexOf(event.target.getAttribute("data-view"));
  const step = { ArrowRight: 1, ArrowLeft: -1, Home: -at, End: TABS.length - 1 - at }[event.key];
  if (at < 0 || step === undefined) return;
  event.preventDefault();
  showTab(TABS[(at + step + TABS.length) % TABS.length], true);
});

// ------------------------------------------------------------------ indexes
async function loadIndexes() {
  try {
    const body = await api("/v1/indexes");
    GS.indexes = body.indexes;
    const chosen = $("index").value;
    $("index").replaceChildren(...GS.indexes.map((ix) => el("option", { value: ix.name }, ix.name)));
    if (GS.indexes.some((ix) => ix.name === chosen)) $("index").value = chosen;
    if (GS.indexes.length && GS.indexes[0].kinds) GS.kinds = GS.indexes[0].kinds;
    indexChanged();
    status(GS.indexes.length + " index(es) served");
  } catch (err) {
    status(err.status === 401 ? "This server needs a token: use “Token…” to enter it." : "Could not list the indexes: " + err.message, true);
  }
}

function indexChanged() {
  const write = canWrite();
  document.body.classList.toggle("read-only", !write);
  const ix = current();
  $("rights").textContent = ix ? (write ? "read and write" : "read only") : "";
  for (const view of Object.values(GS.views)) if (view.onIndex) view.onIndex(ix);
}

$("index").addEventListener("change", indexChanged);

// Runs once every view script has registered.
window.addEventListener("DOMContentLoaded", () => {
  const first = location.hash.slice(1);
  showTab(TABS.includes(first) ? first : "ask");
  loadIndexes();
});
