// The studio's shell: the API client (API key in localStorage, sent as a bearer), typed input
// fields, the hash router, the graphs list (every .ag of the graphs folder, drawn) and a
// graph's page (its diagram and a form typed from its input channels to start a run).
"use strict";
(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const KEY_STORE = "agentgraph:apiKey";

  function h(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(e.dataset, v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) if (c !== null && c !== undefined && c !== false) e.append(c);
    return e;
  }

  function apiKey() { return localStorage.getItem(KEY_STORE) || ""; }
  async function api(method, path, body) {
    const headers = {};
    if (method !== "GET") headers["content-type"] = "application/json";
    if (apiKey()) headers["Authorization"] = "Bearer " + apiKey();
    const r = await fetch(path, { method, headers, body: method !== "GET" ? JSON.stringify(body || {}) : undefined });
    const data = await r.json().catch(() => null);
    if (!r.ok) {
      const e = data && data.error;
      const err = new Error(`${r.status} ${e ? e.code + ": " + e.message : r.statusText}`);
      err.status = r.status;
      throw err;
    }
    return data;
  }
  function showError(msg) { $("#error").textContent = msg || ""; }
  const enc = encodeURIComponent;
  const graphPath = (name) => name.split("/").map(enc).join("/");

  // Typed fields: a channel type (`string int float bool json messages list<T> map<T> T?`) → an
  // input element and a reader. Strings get text, bools a checkbox, numbers a number input,
  // messages a text box (one human message), anything else a JSON editor checked on read.
  function field(type, initial) {
    const optional = /\?$/.test(type);
    const base = type.replace(/\?$/, "");
    let el, get;
    if (base === "bool") {
      el = h("input", { type: "checkbox", class: "typed bool" });
      el.checked = initial === true;
      get = () => el.checked;
    } else if (base === "int" || base === "float") {
      el = h("input", { type: "number", class: "typed number", step: base === "int" ? "1" : "any" });
      if (typeof initial === "number") el.value = String(initial);
      get = () => {
        if (el.value === "") { if (optional) return null; throw new Error("a number is needed"); }
        const n = Number(el.value);
        if (base === "int" && !Number.isInteger(n)) throw new Error("a whole number is needed");
        return n;
      };
    } else if (base === "string") {
      el = h("textarea", { class: "typed string", rows: 2 });
      if (typeof initial === "string") el.value = initial;
      get = () => (optional && el.value === "" ? null : el.value);
    } else if (base === "messages") {
      el = h("textarea", { class: "typed messages", rows: 3, placeholder: "a message" });
      get = () => (el.value.trim() ? [{ type: "human", content: el.value }] : undefined);
    } else {
      el = h("textarea", { class: "typed json", rows: 4, spellcheck: "false" });
      el.value = initial === undefined ? "" : JSON.stringify(initial, null, 2);
      get = () => {
        if (!el.value.trim()) { if (optional) return null; throw new Error("a JSON value is needed"); }
        try { return JSON.parse(el.value); } catch (e) { throw new Error("not valid JSON: " + e.message); }
      };
    }
    el.dataset.type = type;
    return { el, get };
  }

  // A value shown for reading: strings as markdown, anything else as JSON.
  function show(value) {
    if (typeof value === "string") return h("div", { class: "md" }, Markdown.render(value));
    return h("pre", { class: "json" }, JSON.stringify(value, null, 2));
  }

  const diagrams = new Map();
  async function graphInfo(name) {
    if (!diagrams.has(name)) diagrams.set(name, api("GET", "/studio/graphs/" + graphPath(name)));
    try { return await diagrams.get(name); } catch (e) { diagrams.delete(name); throw e; }
  }

  function newThreadId() { return "t-" + Math.random().toString(36).slice(2, 8) + Date.now().toString(36); }

  // #/ : every graph of the folder, drawn.
  async function graphsView(view) {
    document.body.dataset.view = "graphs";
    const list = h("div", { id: "graphs", class: "cards" });
    view.append(h("h1", {}, "Graphs"), h("p", { class: "hint" }, "Every .ag file of the server's graphs folder. Open one to run it."), list);
    const { graphs } = await api("GET", "/studio/graphs");
    for (const g of graphs) {
      const pic = h("div", { class: "pic" }, "…");
      list.append(h("a", { class: "card graph", href: "#/graph/" + graphPath(g.name), dataset: { name: g.name } },
        h("div", { class: "title" }, g.name), pic));
      graphInfo(g.name).then((info) => {
        pic.replaceChildren(Diagram.render(info.diagram));
        if (info.error) pic.append(h("div", { class: "bad" }, info.error.message));
      }).catch((e) => pic.replaceChildren(h("div", { class: "bad" }, e.message)));
    }
    if (!graphs.length) list.append(h("p", {}, "No .ag files in the graphs folder."));
  }

  // #/threads : the threads the server knows.
  async function threadsView(view) {
    document.body.dataset.view = "threads";
    const { threads } = await api("GET", "/threads");
    view.append(h("h1", {}, "Threads"), h("ul", { id: "threads", class: "plain" },
      threads.map((t) => h("li", {}, h("a", { href: "#/thread/" + enc(t.thread_id) }, t.thread_id),
        " ", h("span", { class: "muted" }, t.graph || ""), t.active ? h("span", { class: "badge running" }, "running") : ""))));
    if (!threads.length) view.append(h("p", {}, "No threads yet."));
  }

  // #/graph/NAME : the diagram and a run form typed from the input channels.
  async function graphView(view, name) {
    document.body.dataset.view = "graph";
    const info = await graphInfo(name);
    view.append(h("h1", {}, name));
    if (info.error) view.append(h("div", { class: "bad" }, info.error.message));
    const form = h("form", { id: "run-form", class: "panel" });
    const thread = h("input", { id: "run-thread", value: newThreadId() });
    form.append(h("h2", {}, "Run"), h("label", {}, "thread ", thread));
    const fields = [];
    for (const c of info.channels || []) {
      if (!c.input) continue;
      const f = field(c.type, c.type === "messages" ? undefined : c.default ?? undefined);
      f.el.name = c.name;
      fields.push([c, f]);
      form.append(h("label", { class: "channel" }, h("span", {}, c.name, " ", h("code", {}, c.type)), f.el));
    }
    form.append(h("button", { id: "run-start", type: "submit" }, "Start run"));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      showError("");
      try {
        const input = {};
        for (const [c, f] of fields) {
          const v = f.get();
          if (v !== undefined && !(c.type.endsWith("?") && v === null)) input[c.name] = v;
        }
        const t = thread.value.trim();
        await api("POST", `/threads/${enc(t)}/runs`, { graph: name, input, stream_modes: Studio.MODES });
        location.hash = "#/thread/" + enc(t);
      } catch (e) { showError(e.message); }
    });
    view.append(h("div", { class: "split" }, h("div", { class: "panel pic big" }, Diagram.render(info.diagram)), form));
  }

  async function route() {
    const view = $("#view");
    view.replaceChildren();
    showError("");
    if (window.Studio.leave) { window.Studio.leave(); window.Studio.leave = null; }
    const hash = location.hash.replace(/^#/, "") || "/";
    try {
      if (hash.startsWith("/graph/")) await graphView(view, decodeURIComponent(hash.slice(7)));
      else if (hash.startsWith("/thread/")) await Studio.threadView(view, decodeURIComponent(hash.slice(8)));
      else if (hash === "/threads") await threadsView(view);
      else await graphsView(view);
    } catch (e) { showError(e.message); }
  }

  window.Studio = {
    $, h, api, apiKey, field, show, graphInfo, showError, enc, graphPath, route,
    MODES: ["updates", "custom", "messages", "values", "debug"],
  };

  $("#apikey").value = apiKey();
  $("#apikey").addEventListener("change", () => {
    localStorage.setItem(KEY_STORE, $("#apikey").value.trim());
    route();
  });
  window.addEventListener("hashchange", route);
  window.addEventListener("DOMContentLoaded", route);
})();
