// An n8n workflow ({nodes: [{name, type, position: [x, y], parameters…}], connections}) drawn
// as a node canvas: nodes at their positions, `main` connections as solid arrows between
// output and input ports, `ai_*` connections (sub-nodes such as a chat model, memory or tool
// feeding an agent) dashed from the sub-node up to the agent's bottom edge, labelled with the
// port type. Nodes and connections that are new or changed against `previous` (the workflow
// before the last turn) carry class `added` / `changed` and `data-change`. The JSON is one
// click away (<details>).
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const W = 170, H = 64, M = 40;

  function svg(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (parent) parent.appendChild(e);
    return e;
  }

  /** Whether `v` looks like an n8n workflow. */
  function isWorkflow(v) {
    return !!v && typeof v === "object" && Array.isArray(v.nodes) &&
      !!v.connections && typeof v.connections === "object";
  }

  /** The workflow's connections as a flat list `{from, to, type, out, in, key}`. */
  function connections(wf) {
    const list = [];
    for (const [from, byType] of Object.entries((wf && wf.connections) || {})) {
      for (const [type, outputs] of Object.entries(byType || {})) {
        (outputs || []).forEach((targets, out) => {
          for (const t of targets || []) {
            if (!t || !t.node) continue;
            const c = { from, to: t.node, type: t.type || type, out, in: t.index || 0 };
            c.key = [from, c.type, out, c.to, c.in].join("|");
            list.push(c);
          }
        });
      }
    }
    return list;
  }

  /** What changed from `prev` to `wf`: node names → "added"|"changed", connection keys added. */
  function changes(prev, wf) {
    const before = new Map(((prev && prev.nodes) || []).map((n) => [n.name, n]));
    const nodes = new Map();
    for (const n of (wf && wf.nodes) || []) {
      const old = before.get(n.name);
      if (!old) nodes.set(n.name, "added");
      else if (JSON.stringify(old) !== JSON.stringify(n)) nodes.set(n.name, "changed");
    }
    const had = new Set(connections(prev).map((c) => c.key));
    const links = new Set(connections(wf).map((c) => c.key).filter((k) => !had.has(k)));
    return { nodes, links };
  }

  function short(type) {
    return String(type || "").replace(/^@n8n\/n8n-nodes-langchain\./, "").replace(/^n8n-nodes-base\./, "");
  }

  /** A <div> with the canvas and the JSON of `wf`, changes against `previous` highlighted. */
  function render(wf, previous) {
    const box = document.createElement("div");
    box.className = "wf-canvas";
    const nodes = (wf.nodes || []).filter((n) => n && n.name);
    const pos = new Map();
    nodes.forEach((n, i) => {
      const p = Array.isArray(n.position) ? n.position : [i * 220, 0];
      pos.set(n.name, { x: Number(p[0]) || 0, y: Number(p[1]) || 0 });
    });
    const xs = [...pos.values()].map((p) => p.x), ys = [...pos.values()].map((p) => p.y);
    const minX = Math.min(...xs, Infinity), minY = Math.min(...ys, Infinity);
    const maxX = Math.max(...xs.map((x) => x + W), -Infinity), maxY = Math.max(...ys.map((y) => y + H), -Infinity);
    const width = nodes.length ? maxX - minX + 2 * M : 2 * M, height = nodes.length ? maxY - minY + 2 * M : 2 * M;
    // As wide as the panel (scaled down, never up).
    const root = svg("svg", { class: "canvas", viewBox: `0 0 ${width} ${height}`, width, height,
      style: `width: 100%; max-width: ${width}px; height: auto;` });
    const defs = svg("defs", {}, root);
    for (const [id, cls] of [["wf-arrow", "main"], ["wf-arrow-ai", "ai"]]) {
      const m = svg("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
        markerHeight: 7, orient: "auto-start-reverse" }, defs);
      svg("path", { d: "M0,0 L10,5 L0,10 z", class: "head " + cls }, m);
    }
    const at = (name) => {
      const p = pos.get(name);
      return p && { x: p.x - minX + M, y: p.y - minY + M };
    };
    const diff = previous === undefined ? { nodes: new Map(), links: new Set() } : changes(previous, wf);
    const links = svg("g", { class: "links" }, root);
    for (const c of connections(wf)) {
      const a = at(c.from), b = at(c.to);
      if (!a || !b) continue;
      const ai = c.type !== "main";
      let d, lx, ly;
      if (ai) {
        // Sub-node (below) up to the consumer's bottom edge.
        const x1 = a.x + W / 2, y1 = a.y, x2 = b.x + W / 2, y2 = b.y + H;
        d = `M${x1},${y1} C${x1},${(y1 + y2) / 2} ${x2},${(y1 + y2) / 2} ${x2},${y2}`;
        lx = (x1 + x2) / 2; ly = (y1 + y2) / 2;
      } else {
        const x1 = a.x + W, y1 = a.y + H / 2 + c.out * 10, x2 = b.x, y2 = b.y + H / 2 + c.in * 10;
        const dx = Math.max(40, Math.abs(x2 - x1) / 2);
        d = `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`;
        lx = (x1 + x2) / 2; ly = (y1 + y2) / 2 - 4;
      }
      const added = diff.links.has(c.key);
      const p = svg("path", { d, class: "link " + (ai ? "ai" : "main") + (added ? " added" : ""),
        "data-type": c.type, "data-from": c.from, "data-to": c.to,
        "marker-end": ai ? "url(#wf-arrow-ai)" : "url(#wf-arrow)" }, links);
      if (added) p.dataset.change = "added";
      if (ai) {
        const t = svg("text", { x: lx + 4, y: ly, class: "link-label" }, links);
        t.textContent = c.type.replace(/^ai_/, "");
      }
    }
    const layer = svg("g", { class: "nodes" }, root);
    for (const n of nodes) {
      const p = at(n.name);
      const change = diff.nodes.get(n.name);
      const sub = /langchain\.(lm|memory|tool|embeddings|vectorStore|outputParser|textSplitter|document)/.test(n.type || "");
      const g = svg("g", { class: "wf-node" + (change ? " " + change : "") + (sub ? " sub" : "") +
        (n.disabled ? " disabled" : ""), transform: `translate(${p.x},${p.y})`,
        "data-name": n.name, "data-x": pos.get(n.name).x, "data-y": pos.get(n.name).y }, layer);
      if (change) g.dataset.change = change;
      svg("rect", { width: W, height: H, rx: 10, ry: 10, class: "body" }, g);
      svg("circle", { cx: 0, cy: H / 2, r: 4, class: "port in" }, g);
      svg("circle", { cx: W, cy: H / 2, r: 4, class: "port out" }, g);
      const title = svg("text", { x: 12, y: 26, class: "title" }, g);
      title.textContent = n.name.length > 22 ? n.name.slice(0, 21) + "…" : n.name;
      const type = svg("text", { x: 12, y: 46, class: "type" }, g);
      type.textContent = short(n.type).slice(0, 26);
      const tip = svg("title", {}, g);
      tip.textContent = `${n.name}\n${n.type || ""}${change ? "\n(" + change + " in the last turn)" : ""}`;
    }
    box.appendChild(root);
    const details = document.createElement("details");
    details.className = "wf-json";
    const summary = document.createElement("summary");
    summary.textContent = "workflow JSON";
    const pre = document.createElement("pre");
    pre.textContent = JSON.stringify(wf, null, 2);
    details.append(summary, pre);
    box.appendChild(details);
    return box;
  }

  window.Canvas = { render, isWorkflow, changes, connections };
})();
