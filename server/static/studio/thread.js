// The thread view: the graph drawn with the running node highlighted from the thread's event
// stream (subgraph nodes inside their parent's box), the conversation (markdown) and tool
// progress, the interrupt form typed from the written channel, the thread's plan (tasks with
// their kind, dependencies, status and result; whether it awaits approval) when it has one, the
// thread's background tasks (state, result, a cancel button while one runs) when it has some, the n8n workflow canvas
// when the state holds one, and the event stream, the history as a tree (forks as branches), the state
// at a checkpoint with its diff from the previous one, "fork from here" and re-run.
"use strict";
(function () {
  const S = window.Studio;
  const { h, api, enc } = S;

  window.Studio.threadView = async function threadView(view, thread) {
    document.body.dataset.view = "thread";
    document.body.dataset.status = "idle";
    const base = `/threads/${enc(thread)}`;
    let info = null;          // the graph's diagram and channels
    let graphName = null;
    let svg = null;
    let source = null;
    let selected = null;      // the checkpoint shown in the State tab
    let entries = [];         // the history, newest first
    let previousWorkflow;     // the workflow before the latest turn
    const progress = new Map();
    const live = new Map();   // streamed message id → element

    const status = h("span", { id: "status", class: "badge" }, "idle");
    const pic = h("div", { id: "diagram", class: "panel pic" });
    const interrupt = h("div", { id: "interrupt", class: "panel", hidden: true });
    const messages = h("div", { id: "messages" });
    const progressList = h("ul", { id: "progress", class: "plain" });
    const msg = h("textarea", { id: "msg", rows: 2, placeholder: "Message (Enter sends)" });
    const composer = h("div", { id: "composer", hidden: true }, msg, h("button", { id: "send", onclick: () => send() }, "Send"));
    const convo = h("div", { id: "conversation", class: "panel", hidden: true }, h("h2", {}, "Conversation"), messages, progressList, composer);
    const canvas = h("div", { id: "workflow-canvas", class: "panel", hidden: true });
    const tasksBox = h("div", { id: "background-tasks", class: "panel", hidden: true });
    const planBox = h("div", { id: "plan", class: "panel", hidden: true });
    const events = h("ol", { id: "events", class: "events" });
    const historyBox = h("div", { id: "history" });
    const stateBox = h("div", { id: "state" }, h("p", { class: "hint" }, "Select a checkpoint in History."));
    const tabs = {};
    const tabBar = h("div", { class: "tabs" });
    const tabBody = h("div", { class: "tab-body" });
    for (const [id, label, body] of [["events", "Events", events], ["history", "History", historyBox], ["state", "State", stateBox]]) {
      const pane = h("div", { class: "pane", id: "pane-" + id, hidden: id !== "events" }, body);
      const btn = h("button", { class: "tab" + (id === "events" ? " on" : ""), id: "tab-" + id, onclick: () => showTab(id) }, label);
      tabs[id] = { pane, btn };
      tabBar.append(btn);
      tabBody.append(pane);
    }
    function showTab(id) {
      for (const [k, t] of Object.entries(tabs)) { t.pane.hidden = k !== id; t.btn.classList.toggle("on", k === id); }
    }
    view.append(
      h("div", { class: "thread-head" }, h("h1", {}, "Thread ", h("code", {}, thread)), status,
        h("span", { id: "graph-name", class: "muted" }),
        h("button", { id: "rerun", onclick: () => rerun() }, "Re-run last turn"),
        h("button", { id: "cancel", onclick: () => api("POST", base + "/cancel", {}).catch((e) => S.showError(e.message)) }, "Cancel")),
      h("div", { class: "thread" },
        h("div", { class: "left" }, pic, interrupt, convo, planBox, tasksBox, canvas),
        h("div", { class: "right panel" }, tabBar, tabBody)));

    function setStatus(s) { status.textContent = s; status.className = "badge " + s; document.body.dataset.status = s; }

    async function loadGraph(name) {
      if (!name || name === graphName) return;
      graphName = name;
      S.$("#graph-name").textContent = name;
      info = await S.graphInfo(name);
      svg = Diagram.render(info.diagram);
      pic.replaceChildren(svg);
      const inputs = (info.channels || []).filter((c) => c.input);
      composer.hidden = !inputs.some((c) => c.type === "messages");
      if (!composer.hidden) convo.hidden = false;
    }

    // ---- the event stream ----
    function connect() {
      let url = `${base}/events?lastEventId=0`;
      if (S.apiKey()) url += "&access_token=" + enc(S.apiKey());
      source = new EventSource(url);
      source.onopen = () => { document.body.dataset.connected = "1"; };
      source.onmessage = (m) => handle(Number(m.lastEventId), JSON.parse(m.data));
      source.addEventListener("gap", (m) => {
        const g = JSON.parse(m.data);
        events.append(h("li", { class: "gap" }, `events ${g.from}–${g.to} are no longer kept`));
      });
    }
    window.Studio.leave = () => { if (source) source.close(); };

    function summary(ev) {
      const d = ev.data;
      if (ev.mode === "run") return d.status + (d.error ? ": " + d.error : "");
      if (ev.mode === "debug") return d.type + (d.checkpoint_id ? " " + d.checkpoint_id.slice(-8) : "");
      if (ev.mode === "custom" && d && d.tool) return `${d.tool}: ${d.title || d.status}`;
      if (ev.mode === "messages" && d && d.delta) return JSON.stringify(d.delta).slice(0, 80);
      const s = JSON.stringify(d);
      return s && s.length > 100 ? s.slice(0, 99) + "…" : s;
    }

    function handle(seq, ev) {
      const d = ev.data || {};
      const root = !ev.ns || ev.ns.length === 0;
      const where = (ev.ns || []).map((s) => s.split(":")[0]).concat(ev.node ? [ev.node] : []).join(" › ");
      const body = events.closest(".tab-body");
      const atEnd = body && body.scrollTop + body.clientHeight >= body.scrollHeight - 30;
      events.append(h("li", { class: "ev mode-" + ev.mode, dataset: { seq: String(seq), mode: ev.mode } },
        h("span", { class: "seq" }, String(seq)), h("span", { class: "mode" }, ev.mode),
        h("span", { class: "node" }, where), h("span", { class: "sum" }, summary(ev))));
      if (events.children.length > 2000) events.firstChild.remove();
      if (atEnd && !tabs.events.pane.hidden) body.scrollTop = body.scrollHeight;
      switch (ev.mode) {
        case "run": return runEvent(d);
        case "debug":
          if (svg && d.type === "task_start") Diagram.highlight(svg, ev.ns, ev.node);
          if (d.type === "checkpoint" && root) scheduleHistory();
          break;
        case "updates":
          if (svg && ev.node) {
            const e = Diagram.find(svg, ev.ns, ev.node);
            if (e && !e.classList.contains("active")) e.classList.add("visited");
          }
          break;
        case "custom":
          if (d.tool) showProgress(d);
          break;
        case "messages":
          if (root && d.delta && d.id) {
            let el = live.get(d.id);
            if (!el) { el = message("ai", ""); live.set(d.id, el); el.dataset.text = ""; }
            el.dataset.text += d.delta;
            el.querySelector(".body").replaceChildren(Markdown.render(el.dataset.text));
          }
          break;
        case "values":
          if (root) showValues(d);
          break;
      }
    }

    let refreshTimer = null;
    function runEvent(d) {
      if (d.status === "started") {
        setStatus("running");
        // The workflow before this turn is read again from the history (its newest input
        // checkpoint) once the run wrote its first checkpoint.
        previousWorkflow = undefined;
        interrupt.hidden = true;
        if (svg) Diagram.clear(svg);
        return;
      }
      setStatus(d.status);
      // Progress that never said it finished ends with the run.
      for (const li of progressList.querySelectorAll("li.running")) {
        li.classList.remove("running");
        li.classList.add("ended");
        li.querySelector(".st").textContent = d.status === "done" ? "ended" : d.status;
      }
      if (svg) {
        Diagram.highlight(svg, null, null);
        if (d.status === "interrupted") for (const i of d.interrupts || []) Diagram.find(svg, i.ns, i.node)?.classList.add("active", "waiting");
      }
      if (d.status === "failed") S.showError("run failed: " + (d.error || "unknown error"));
      // A replayed log ends many runs in a row: read the state once, after the last.
      clearTimeout(refreshTimer);
      refreshTimer = setTimeout(refresh, 120);
    }

    function showProgress(d) {
      const key = d.call_id || d.tool;
      let li = progress.get(key);
      if (!li || (li.classList.contains("completed") && !d.call_id)) {
        li = h("li", { class: "progress" }, h("span", { class: "st" }), " ", h("span", { class: "what" }));
        progress.set(key, li);
        progressList.append(li);
        convo.hidden = false;
      }
      const st = d.status || "running";
      li.className = "progress " + st;
      li.querySelector(".st").textContent = st;
      li.querySelector(".what").textContent = d.title && d.title !== `${d.tool} ${st}` ? `${d.tool}: ${d.title}` : d.tool;
    }

    // ---- state: conversation, workflow canvas ----
    function message(type, text) {
      const el = h("div", { class: "msg " + type }, h("div", { class: "who" }, type), h("div", { class: "body md" }, Markdown.render(text)));
      messages.append(el);
      return el;
    }
    function text(content) {
      if (typeof content === "string") return content;
      if (Array.isArray(content)) return content.map((p) => (p && typeof p.text === "string" ? p.text : "")).join("");
      return "";
    }
    let lastValues = null;
    function showValues(values) {
      if (!values || typeof values !== "object") return;
      lastValues = values;
      if (Array.isArray(values.messages)) {
        convo.hidden = false;
        messages.replaceChildren();
        live.clear();
        for (const m of values.messages) {
          const t = m && text(m.content);
          if (!t || (m.type !== "human" && m.type !== "ai")) continue;
          message(m.type, t);
        }
      }
      showCanvas(values);
      showPlan(values);
      showTasks(values);
    }
    // The plan of the state (`plan`: `{tasks, approved}`, written by the `plan` tool).
    function showPlan(values) {
      const plan = values.plan;
      const tasks = plan && Array.isArray(plan.tasks) ? plan.tasks : [];
      if (!tasks.length) {
        planBox.hidden = true;
        return;
      }
      const rows = tasks.map((t) => {
        const st = String(t.status || "pending");
        return h("li", { class: "plan-task", dataset: { id: String(t.id), status: st } },
          h("code", {}, String(t.id)), " ", h("span", { class: "badge " + st }, st), " ",
          h("span", { class: "muted" }, String(t.kind || "")), " ", String(t.title || ""),
          Array.isArray(t.deps) && t.deps.length
            ? h("span", { class: "muted deps" }, " after " + t.deps.join(", ")) : null,
          t.result ? h("div", { class: "muted result" }, String(t.result)) : null);
      });
      planBox.hidden = false;
      planBox.dataset.approved = plan.approved ? "yes" : "no";
      planBox.replaceChildren(
        h("h2", {}, "Plan ", plan.approved ? null : h("span", { class: "badge interrupted" }, "awaiting approval")),
        h("ol", { class: "plain" }, rows));
    }
    // The task list of the state (`background_tasks`), with what the server knows of each now.
    async function showTasks(values) {
      const list = values.background_tasks;
      if (!list || typeof list !== "object" || Array.isArray(list) || !Object.keys(list).length) return;
      const now = await api("GET", base + "/tasks").then((r) => r.tasks || [], () => []);
      const byId = new Map(now.map((t) => [t.id, t]));
      const rows = Object.values(list)
        .sort((a, b) => (a.step - b.step) || String(a.id).localeCompare(String(b.id)))
        .map((t) => {
          const l = byId.get(t.id);
          const state = (l && l.state) || t.state || "running";
          const result = (l && l.result) || t.result || "";
          const row = h("li", { class: "task", dataset: { id: t.id, state } },
            h("code", {}, t.id), " ", h("span", { class: "badge " + state }, state), " ",
            t.role ? t.role + ": " : "", t.task || "",
            result ? h("div", { class: "muted result" }, result) : null);
          if (state === "running") {
            row.append(" ", h("button", { class: "cancel-task", onclick: () =>
              api("POST", base + "/tasks/" + enc(t.id) + "/cancel", {}).then(refresh, (e) => S.showError(e.message)) }, "Cancel"));
          }
          return row;
        });
      tasksBox.hidden = false;
      tasksBox.replaceChildren(h("h2", {}, "Background tasks"), h("ul", { class: "plain" }, rows));
    }
    function showCanvas(values) {
      const key = Object.keys(values).find((k) => Canvas.isWorkflow(values[k]));
      if (key) {
        canvas.hidden = false;
        const open = canvas.querySelector("details.wf-json")?.open;
        canvas.replaceChildren(h("h2", {}, "Workflow ", h("code", {}, key),
          h("span", { class: "muted" }, " (highlighted: added or changed in the last turn)")),
          Canvas.render(values[key], previousWorkflow === undefined ? undefined : (previousWorkflow && previousWorkflow[key]) || { nodes: [], connections: {} }));
        if (open) canvas.querySelector("details.wf-json").open = true;
      }
    }

    // Refreshes overlap (a slow one started before the run ended): only the newest applies.
    let refreshGen = 0;
    async function refresh() {
      const gen = ++refreshGen;
      try {
        const st = await api("GET", base + "/state");
        await loadGraph(st.graph);
        if (gen !== refreshGen) return;
        if (st.active) setStatus("running");
        else if (document.body.dataset.status === "idle" || document.body.dataset.status === "running") {
          setStatus(st.interrupts && st.interrupts.length ? "interrupted" : "done");
        }
        await loadHistory();
        if (gen !== refreshGen) return;
        showValues(st.values);
        if (!st.active && st.interrupts && st.interrupts.length) {
          showInterrupt(st.interrupts);
          for (const i of st.interrupts) Diagram.find(svg, i.ns, i.node)?.classList.add("active", "waiting");
        } else interrupt.hidden = true;
      } catch (e) {
        if (e.status !== 404) return S.showError(e.message);
        // No checkpoint yet: the thread's graph is known as soon as its first run started.
        const { threads } = await api("GET", "/threads").catch(() => ({ threads: [] }));
        const t = threads.find((x) => x.thread_id === thread);
        if (t && t.graph) await loadGraph(t.graph).catch((e2) => S.showError(e2.message));
      }
    }

    // ---- interrupts ----
    function itemById(block, id) {
      for (const it of block.items) {
        if (it.id === id) return it;
        if (it.type === "cluster") { const f = itemById(it.graph, id); if (f) return f; }
      }
      return null;
    }
    function channelOf(i) {
      const node = svg && Diagram.find(svg, i.ns, i.node);
      const item = node && itemById(info.diagram.graph, node.dataset.id);
      const name = item && item.writes;
      // A channel of a subgraph is not in the root's list: its type is then unknown (json).
      const ch = name && (i.ns || []).length === 0 && (info.channels || []).find((c) => c.name === name);
      return { name: name || null, type: ch ? ch.type : "json" };
    }
    // An interrupt's payload: an object as a table of its fields, anything else as it is.
    function payload(v) {
      if (!v || typeof v !== "object" || Array.isArray(v)) return S.show(v);
      return h("table", { class: "payload" }, Object.entries(v).map(([k, x]) =>
        h("tr", {}, h("th", {}, k), h("td", {}, S.show(x)))));
    }
    function showInterrupt(list) {
      // The same questions again (a state refresh): keep the form and what was typed.
      const ids = list.map((i) => i.id).join(",");
      if (!interrupt.hidden && interrupt.dataset.ids === ids) return;
      interrupt.dataset.ids = ids;
      const fields = [];
      interrupt.replaceChildren(h("h2", {}, "Waiting for an answer"));
      for (const i of list) {
        const ch = channelOf(i);
        const f = S.field(ch.type);
        f.el.id = "answer-" + fields.length;
        f.el.classList.add("answer");
        const v = i.value;
        const question = v && typeof v === "object" && typeof v.question === "string" ? v.question : null;
        const rest = question ? Object.fromEntries(Object.entries(v).filter(([k]) => k !== "question")) : v;
        interrupt.append(h("div", { class: "ask", dataset: { node: i.node, channel: ch.name || "", type: ch.type } },
          question ? h("div", { class: "question md" }, Markdown.render(question)) : null,
          rest !== undefined && !(question && Object.keys(rest).length === 0) ? payload(rest) : null,
          h("label", {}, h("span", {}, "answer", ch.name ? " → " : "", ch.name ? h("code", {}, ch.name) : "", " ", h("code", {}, ch.type)), f.el)));
        fields.push([i, f]);
      }
      interrupt.append(h("button", { id: "answer", onclick: async () => {
        S.showError("");
        try {
          const answers = fields.map(([i, f]) => [i.id, f.get()]);
          const body = answers.length === 1 ? { value: answers[0][1] } : { values_by_id: Object.fromEntries(answers) };
          body.stream_modes = S.MODES;
          await api("POST", base + "/resume", body);
          interrupt.hidden = true;
        } catch (e) { S.showError(e.message); }
      } }, "Answer and continue"));
      interrupt.hidden = false;
    }

    // ---- history tree ----
    let historyTimer = null;
    function scheduleHistory() {
      clearTimeout(historyTimer);
      historyTimer = setTimeout(() => loadHistory().catch(() => {}), 150);
    }
    async function loadHistory() {
      const r = await api("GET", base + "/history?limit=500");
      entries = r.history || [];
      const byId = new Map(entries.map((e) => [e.checkpoint_id, e]));
      const children = new Map();
      const roots = [];
      for (const e of [...entries].reverse()) {
        if (e.parent_id && byId.has(e.parent_id)) {
          if (!children.has(e.parent_id)) children.set(e.parent_id, []);
          children.get(e.parent_id).push(e);
        } else roots.push(e);
      }
      const latestInput = entries.find((e) => e.source === "input");
      if (latestInput && previousWorkflow === undefined && info) {
        const st = await api("GET", `${base}/state?checkpoint_id=${enc(latestInput.checkpoint_id)}`).catch(() => null);
        previousWorkflow = st ? st.values : null;
        if (lastValues) showCanvas(lastValues);
      } else if (!latestInput) previousWorkflow = null;
      historyBox.replaceChildren(h("ul", { class: "tree" }, roots.map((r) => chain(r, children))));
      historyBox.dataset.count = String(entries.length);
    }
    function writers(e) {
      return e.writes && typeof e.writes === "object" ? Object.keys(e.writes).join(", ") : "";
    }
    function chain(e, children) {
      const items = [];
      let cur = e;
      for (;;) {
        items.push(h("li", { class: "cp" + (selected === cur.checkpoint_id ? " selected" : "") + (cur.source === "fork" ? " forked" : ""), dataset: { id: cur.checkpoint_id } },
          h("button", { class: "cp-btn", onclick: ((c) => () => select(c.checkpoint_id))(cur) },
            h("span", { class: "step" }, "step " + cur.step), " ", h("span", { class: "src src-" + cur.source }, cur.source), " ",
            h("span", { class: "w" }, writers(cur)),
            cur.next && cur.next.length ? h("span", { class: "muted" }, " → " + cur.next.join(", ")) : "",
            cur.interrupts && cur.interrupts.length ? h("span", { class: "badge interrupted" }, "interrupt") : "")));
        const kids = children.get(cur.checkpoint_id) || [];
        if (kids.length === 1) { cur = kids[0]; continue; }
        if (kids.length > 1) {
          items.push(h("li", { class: "fork" }, h("div", { class: "muted" }, `${kids.length} branches`),
            h("ul", { class: "branches" }, kids.map((k) => h("li", { class: "branch" }, h("ul", { class: "tree" }, chain(k, children)))))));
        }
        break;
      }
      return items;
    }

    // ---- state at a checkpoint, diff, fork ----
    async function select(id) {
      selected = id;
      for (const li of historyBox.querySelectorAll("li.cp")) li.classList.toggle("selected", li.dataset.id === id);
      showTab("state");
      const entry = entries.find((e) => e.checkpoint_id === id);
      const now = await api("GET", `${base}/state?checkpoint_id=${enc(id)}`);
      const before = entry && entry.parent_id
        ? await api("GET", `${base}/state?checkpoint_id=${enc(entry.parent_id)}`).catch(() => null) : null;
      const diff = h("table", { id: "diff" }, h("tr", {}, h("th", {}, "channel"), h("th", {}, "before"), h("th", {}, "after")));
      const a = (before && before.values) || {}, b = now.values || {};
      let changed = 0;
      for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
        const x = JSON.stringify(a[k]), y = JSON.stringify(b[k]);
        if (x === y) continue;
        changed++;
        const kind = !(k in a) ? "added" : !(k in b) ? "removed" : "changed";
        diff.append(h("tr", { class: "change " + kind, dataset: { channel: k } }, h("td", {}, h("code", {}, k), " ", h("span", { class: "muted" }, kind)),
          h("td", {}, h("pre", {}, x === undefined ? "—" : JSON.stringify(a[k], null, 1))),
          h("td", {}, h("pre", {}, y === undefined ? "—" : JSON.stringify(b[k], null, 1)))));
      }
      if (!changed) diff.append(h("tr", {}, h("td", { colspan: 3, class: "muted" }, before ? "no channel changed" : "the first checkpoint")));
      const values = h("textarea", { id: "fork-values", rows: 3, spellcheck: "false", placeholder: '{"channel": "new value"} (optional)' });
      stateBox.replaceChildren(
        h("h3", {}, "Checkpoint ", h("code", { id: "state-checkpoint" }, id), " step ", String(now.step)),
        h("h4", {}, "Diff from the previous checkpoint"), diff,
        h("h4", {}, "Values"), h("pre", { id: "state-values", class: "json" }, JSON.stringify(now.values, null, 2)),
        h("div", { class: "fork-box" }, h("h4", {}, "Fork from here"), values,
          h("button", { id: "fork", onclick: async () => {
            S.showError("");
            try {
              const body = { checkpoint_id: id, stream_modes: S.MODES };
              if (values.value.trim()) body.values = JSON.parse(values.value);
              await api("POST", base + "/fork", body);
            } catch (e) { S.showError(e.message); }
          } }, "Fork from here")));
    }

    async function rerun() {
      S.showError("");
      const input = entries.find((e) => e.source === "input");
      if (!input) return S.showError("the thread has no run to repeat");
      try { await api("POST", base + "/fork", { checkpoint_id: input.checkpoint_id, stream_modes: S.MODES }); }
      catch (e) { S.showError(e.message); }
    }

    async function send() {
      const content = msg.value.trim();
      if (!content || !graphName) return;
      S.showError("");
      try {
        await api("POST", base + "/runs", { graph: graphName, input: { messages: [{ type: "human", content }] }, stream_modes: S.MODES });
        msg.value = "";
        previousWorkflow = undefined;
      } catch (e) { S.showError(e.message); }
    }
    msg.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); } });

    await refresh();
    connect();
  };
})();
