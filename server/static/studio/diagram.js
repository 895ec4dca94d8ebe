// Draws the DSL's diagram structure (GET /studio/graphs/{name} → diagram, see dsl viz/json.rs)
// as SVG: a layered layout from START downwards (longest path, back edges drawn on the side),
// subgraphs laid out on their own and drawn as nested boxes. Every node is one
// <g class="dnode" data-id data-name data-path>; `highlight` marks the running node from a
// run event's namespace and node name.
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const GAP_X = 28, GAP_Y = 44, PAD = 14, LABEL_H = 22, CHAR_W = 7, LINE_H = 15;

  function svg(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (parent) parent.appendChild(e);
    return e;
  }

  function nodeSize(item) {
    if (item.shape === "join") return { w: 16, h: 16 };
    if (item.shape === "start" || item.shape === "end") return { w: 64, h: 28 };
    const lines = item.label || [item.name];
    const w = Math.max(...lines.map((l) => l.length)) * CHAR_W + 26;
    return { w: Math.max(70, Math.min(w, 260)), h: lines.length * LINE_H + 14 };
  }

  // Lays out one block: returns {w, h, items: Map id → {item, x, y, w, h, layout?}, edges}.
  function layout(block) {
    const items = new Map();
    for (const item of block.items) {
      const entry = { item };
      if (item.type === "cluster") {
        entry.layout = layout(item.graph);
        entry.w = Math.max(entry.layout.w + 2 * PAD, (item.label[0] || "").length * CHAR_W + 40);
        entry.h = entry.layout.h + 2 * PAD + LABEL_H;
      } else {
        Object.assign(entry, nodeSize(item));
      }
      items.set(item.id, entry);
    }
    const ids = [...items.keys()];
    const out = new Map(ids.map((id) => [id, []]));
    for (const e of block.edges) if (out.has(e.from) && items.has(e.to)) out.get(e.from).push(e.to);
    // Back edges: those closing a cycle in a depth-first walk from START (then the rest).
    const back = new Set(), state = new Map();
    const dfs = (id) => {
      state.set(id, 1);
      for (const t of out.get(id)) {
        if (state.get(t) === 1) back.add(id + "\u0000" + t);
        else if (!state.has(t)) dfs(t);
      }
      state.set(id, 2);
    };
    if (items.has(block.start)) dfs(block.start);
    for (const id of ids) if (!state.has(id)) dfs(id);
    // Ranks: the longest path over forward edges.
    const rank = new Map(ids.map((id) => [id, 0]));
    const indeg = new Map(ids.map((id) => [id, 0]));
    for (const id of ids) for (const t of out.get(id)) if (!back.has(id + "\u0000" + t)) indeg.set(t, indeg.get(t) + 1);
    const queue = ids.filter((id) => indeg.get(id) === 0);
    while (queue.length) {
      const id = queue.shift();
      for (const t of out.get(id)) {
        if (back.has(id + "\u0000" + t)) continue;
        rank.set(t, Math.max(rank.get(t), rank.get(id) + 1));
        indeg.set(t, indeg.get(t) - 1);
        if (indeg.get(t) === 0) queue.push(t);
      }
    }
    const maxRank = Math.max(0, ...[...rank.entries()].filter(([id]) => id !== block.end).map(([, r]) => r));
    if (items.has(block.end)) rank.set(block.end, maxRank + 1);
    const layers = [];
    for (const id of ids) (layers[rank.get(id)] ||= []).push(id);
    // Order within layers: declaration order, then two barycenter sweeps.
    const pos = new Map();
    layers.forEach((l) => l && l.forEach((id, i) => pos.set(id, i)));
    const preds = new Map(ids.map((id) => [id, []]));
    for (const id of ids) for (const t of out.get(id)) if (!back.has(id + "\u0000" + t)) preds.get(t).push(id);
    for (let sweep = 0; sweep < 2; sweep++) {
      for (const l of layers) {
        if (!l) continue;
        const bary = (id) => {
          const p = preds.get(id);
          return p.length ? p.reduce((s, q) => s + pos.get(q), 0) / p.length : pos.get(id);
        };
        l.sort((a, b) => bary(a) - bary(b) || pos.get(a) - pos.get(b));
        l.forEach((id, i) => pos.set(id, i));
      }
    }
    // Coordinates: layers top to bottom, each centred.
    let y = 0, width = 0;
    const rows = [];
    for (const l of layers) {
      if (!l) continue;
      const w = l.reduce((s, id) => s + items.get(id).w, 0) + GAP_X * (l.length - 1);
      const h = Math.max(...l.map((id) => items.get(id).h));
      rows.push({ l, w, h, y });
      width = Math.max(width, w);
      y += h + GAP_Y;
    }
    const hasBack = back.size > 0;
    for (const r of rows) {
      let x = (width - r.w) / 2;
      for (const id of r.l) {
        const e = items.get(id);
        e.x = x; e.y = r.y + (r.h - e.h) / 2; e.rank = rank.get(id);
        x += e.w + GAP_X;
      }
    }
    return { w: width + (hasBack ? 60 : 0), h: Math.max(0, y - GAP_Y), items, edges: block.edges, back, width };
  }

  function drawNode(g, e, path) {
    const it = e.item;
    const node = svg("g", { class: "dnode shape-" + it.shape, "data-id": it.id, "data-name": it.name,
      "data-path": path.join("/"), transform: `translate(${e.x},${e.y})` }, g);
    const title = svg("title", {}, node);
    title.textContent = (path.length ? path.join(" › ") + " › " : "") + it.label.join(" ");
    if (it.shape === "join") {
      svg("circle", { cx: 8, cy: 8, r: 7, class: "body" }, node);
      return;
    }
    if (it.shape === "hexagon") {
      const { w, h } = e, k = 10;
      svg("polygon", { class: "body", points: `${k},0 ${w - k},0 ${w},${h / 2} ${w - k},${h} ${k},${h} 0,${h / 2}` }, node);
    } else {
      const r = it.shape === "start" || it.shape === "end" ? e.h / 2 : 6;
      svg("rect", { class: "body", width: e.w, height: e.h, rx: r, ry: r }, node);
      if (it.shape === "end") svg("rect", { class: "ring", x: 3, y: 3, width: e.w - 6, height: e.h - 6, rx: r - 3, ry: r - 3 }, node);
    }
    it.label.forEach((line, i) => {
      const t = svg("text", { x: e.w / 2, y: 12 + (e.h - it.label.length * LINE_H) / 2 + i * LINE_H,
        "text-anchor": "middle", class: i === 0 ? "name" : "sub" }, node);
      t.textContent = line;
    });
  }

  function draw(g, lay, path, ox, oy) {
    const group = svg("g", { transform: `translate(${ox},${oy})` }, g);
    const edges = svg("g", { class: "edges" }, group);
    for (const [, e] of lay.items) {
      if (e.item.type === "cluster") {
        const c = svg("g", { class: "dcluster", "data-id": e.item.id, "data-name": e.item.name,
          "data-path": path.join("/"), transform: `translate(${e.x},${e.y})` }, group);
        svg("rect", { class: "body", width: e.w, height: e.h, rx: 10, ry: 10 }, c);
        const t = svg("text", { x: 10, y: 16, class: "name" }, c);
        t.textContent = e.item.label.join(" · ");
        draw(c, e.layout, path.concat(e.item.name), PAD + (e.w - 2 * PAD - e.layout.w) / 2, PAD + LABEL_H);
      } else {
        drawNode(group, e, path);
      }
    }
    // A node with many labelled routes: their conditions only on hover, not written over
    // each other.
    const labelled = new Map();
    for (const ed of lay.edges) if (ed.label && ed.kind !== "wait") labelled.set(ed.from, (labelled.get(ed.from) || 0) + 1);
    for (const ed of lay.edges) {
      const a = lay.items.get(ed.from), b = lay.items.get(ed.to);
      if (!a || !b) continue;
      const isBack = lay.back.has(ed.from + "\u0000" + ed.to);
      let d, lx, ly, anchor = "start";
      if (isBack) {
        const x1 = a.x + a.w, y1 = a.y + a.h / 2, x2 = b.x + b.w, y2 = b.y + b.h / 2;
        const xr = lay.width + 40;
        d = `M${x1},${y1} C${xr},${y1} ${xr},${y2} ${x2},${y2}`;
        lx = xr - 10; ly = (y1 + y2) / 2;
      } else if (b.rank - a.rank > 1 && Math.abs((a.x + a.w / 2) - (b.x + b.w / 2)) < 40) {
        // Skipping layers straight down would run through the nodes between: bend left.
        const x1 = a.x, y1 = a.y + a.h / 2, x2 = b.x, y2 = b.y + b.h / 2;
        const xl = Math.min(x1, x2) - 50;
        d = `M${x1},${y1} C${xl},${y1} ${xl},${y2} ${x2},${y2}`;
        lx = xl - 2; ly = (y1 + y2) / 2; anchor = "end";
      } else {
        const x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w / 2, y2 = b.y;
        const my = (y1 + y2) / 2;
        d = `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`;
        // The label near the target (at t = 0.7 on the curve), so labels of one node's
        // several routes spread out.
        const t = 0.7, u = 1 - t;
        lx = u * u * u * x1 + 3 * u * u * t * x1 + 3 * u * t * t * x2 + t * t * t * x2;
        ly = u * u * u * y1 + 3 * u * u * t * my + 3 * u * t * t * my + t * t * t * y2;
      }
      const path = svg("path", { d, class: "edge kind-" + ed.kind, "marker-end": "url(#arrow)",
        "data-from": ed.from, "data-to": ed.to }, edges);
      if (ed.label) svg("title", {}, path).textContent = ed.label;
      if (ed.label && ed.kind !== "wait" && labelled.get(ed.from) <= 3) {
        const t = svg("text", { x: anchor === "end" ? lx : lx + 4, y: ly, class: "elabel", "text-anchor": anchor }, edges);
        t.textContent = ed.label.length > 28 ? ed.label.slice(0, 27) + "…" : ed.label;
        const tip = svg("title", {}, t);
        tip.textContent = ed.label;
      }
    }
  }

  /** An <svg> drawing `diagram` ({name, graph}). */
  function render(diagram) {
    const lay = layout(diagram.graph);
    const margin = 16;
    const root = svg("svg", { class: "diagram", xmlns: NS,
      viewBox: `0 0 ${lay.w + 2 * margin + 180} ${lay.h + 2 * margin}`,
      width: lay.w + 2 * margin + 180, height: lay.h + 2 * margin });
    const defs = svg("defs", {}, root);
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
      markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
    svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }, marker);
    draw(root, lay, [], margin + 90, margin);
    return root;
  }

  /** The node (or cluster) element for a run event's namespace (`["sub:task…"]`) and node. */
  function find(root, ns, node) {
    const path = (ns || []).map((s) => String(s).split(":")[0]);
    const sel = (p, n) => `[data-path="${CSS.escape(p.join("/"))}"][data-name="${CSS.escape(n)}"]`;
    return root.querySelector(".dnode" + sel(path, node)) || root.querySelector(".dcluster" + sel(path, node));
  }

  /** Marks the node a run is in (and its enclosing subgraphs) `active`, previous ones `visited`. */
  function highlight(root, ns, node) {
    for (const e of root.querySelectorAll(".active")) { e.classList.remove("active", "waiting"); e.classList.add("visited"); }
    if (!node) return null;
    const path = (ns || []).map((s) => String(s).split(":")[0]);
    for (let i = 0; i < path.length; i++) {
      const c = find(root, path.slice(0, i).map((p) => p + ":"), path[i]);
      if (c) c.classList.add("active");
    }
    const e = find(root, ns, node);
    if (e) { e.classList.remove("visited"); e.classList.add("active"); }
    return e;
  }

  function clear(root) {
    for (const e of root.querySelectorAll(".active, .visited, .waiting")) e.classList.remove("active", "visited", "waiting");
  }

  window.Diagram = { render, highlight, clear, find };
})();
