//! The studio (`agentgraph serve`'s page at `/`) in headless Chromium, over the same WebDriver
//! client as the chat page's tests (`browser.rs`): the graphs folder listed and drawn before
//! any run, `approval.ag` answered through the form typed from its string channel (a bool
//! channel gets a checkbox), the history tree after a fork, the state diff between two
//! checkpoints, markdown with script and handler payloads rendered inert, and the builder's
//! workflow drawn as a canvas after a scripted build.
//!
//! With `AGENTGRAPH_SCREENSHOTS=<folder>` each view is saved there as a PNG. Skips like
//! `browser.rs` when chromium or chromedriver is missing (a failure under `CI=true`).

use crate::browser::{builder_graphs, builder_registry, slow_registry, Browser, CONFIRM_AG};
use agentgraph_n8n::{RegistryFactory, CHAT_PAGE};
use agentgraph_server::{serve_on, Page, ServerConfig, ServerState};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// A graph that starts a background task (the orchestrator's shape, on a scripted model).
/// A thread whose state holds a plan as the `plan` tool writes it: one task done, one waiting
/// on it, not approved yet.
const PLANNED_AG: &str = r#"graph planned {
  state {
    plan: json?
  }

  node write {
    set {
      plan: {
        tasks: [
          {
            id: "look",
            kind: "research",
            title: "Find the API",
            deps: [],
            status: "succeeded",
            result: "It has a REST API.",
          },
          {
            id: "build",
            kind: "build-workflow",
            title: "Build the sync",
            deps: ["look"],
            status: "pending",
          },
        ],
        approved: false,
      }
    }
  }

  START -> write
  write -> END
}
"#;

const TASKS_AG: &str = r#"graph tasks {
  state {
    messages: messages
    background_tasks: json = {} reduce merge
    background_status: string = ""
  }
  model main = scripted { script: "tasks.json" }
  prompt status = "{{ background_status }}"
  tools t = [start_background_task]
  node tasks: tool { tool: task_status, model: main, output: background_status }
  node agent: llm { model: main, system: [status], messages: messages, tools: t }
  node tools: tool_executor { tools: t, model: main }
  START -> tasks -> agent
  agent -> route {
    has_tool_calls(last(messages)) => tools
    else                           => END
  }
  tools -> tasks
}
"#;

/// Its script: one `match` group (the task's own thread starts the script at its start too).
fn tasks_script() -> Value {
    json!({"responses": [
        {"node": "task", "match": "summarise notes", "text": "Summary ready."},
        {"node": "agent", "match": "runs in the background; its status", "text": "Started it."},
        {"node": "agent", "match": "start it", "tool_calls": [{"name": "start_background_task",
            "args": {"id": "notes", "role": "summariser", "instructions": "Summarise.",
                     "task": "summarise notes", "tools": ["search_nodes"]}}]}
    ]})
}

/// A graph whose answer and question carry markdown with script and handler payloads.
const MARKDOWN_AG: &str = r##"
graph markdown {
  state {
    messages: messages
    reply: string = ""
  }
  node say {
    set {
      messages: [{ type: "ai", content: "# Title\n**bold** and `code`\n<script>window.pwned = 1</script>\n<img src=x onerror='window.pwned = 2'>\n[click](javascript:window.pwned=3) [ok](https://example.com)\n- one\n- two" }]
    }
  }
  node ask: interrupt {
    value: { question: "Is **this** fine? <img src=x onerror='window.pwned = 4'>" }
    write: reply
  }
  START -> say -> ask -> END
}
"##;

/// The server with the studio at `/` (and the chat page at `/chat`, as `serve` has them), the
/// builder graphs, `approval.ag` and the test graphs, the scripted model.
async fn start_server(
    root: &Path,
    registry: RegistryFactory,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    std::env::set_var("AGENTGRAPH_PROVIDER", "scripted");
    let graphs = builder_graphs(root);
    let examples = graphs.join("examples");
    std::fs::create_dir_all(&examples).expect("mkdir");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples/approval.ag");
    std::fs::copy(shipped, examples.join("approval.ag")).expect("copy approval.ag");
    std::fs::write(graphs.join("confirm.ag"), CONFIRM_AG).expect("write");
    std::fs::write(graphs.join("markdown.ag"), MARKDOWN_AG).expect("write");
    std::fs::write(graphs.join("tasks.ag"), TASKS_AG).expect("write");
    std::fs::write(graphs.join("planned.ag"), PLANNED_AG).expect("write");
    std::fs::write(graphs.join("tasks.json"), tasks_script().to_string()).expect("write");
    let mut config = ServerConfig::new(graphs, root.join("db"))
        .registry(registry)
        .studio()
        .page(Page::html("/chat", CHAT_PAGE));
    config.events_per_thread = 10_000;
    let state = ServerState::new(&config).expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve_on(listener, state, async move {
        let _ = stopped.await;
    }));
    (base, stop)
}

async fn setup(
    registry: RegistryFactory,
) -> Option<(
    tempfile::TempDir,
    String,
    tokio::sync::oneshot::Sender<()>,
    Browser,
)> {
    let found = agentgraph_test_support::require_browser()?;
    let root = tempfile::tempdir().expect("tempdir");
    let (base, stop) = start_server(root.path(), registry).await;
    let browser = Browser::start(&found.chromedriver, &found.chromium).await;
    Some((root, base, stop, browser))
}

/// Standard base64 (the WebDriver screenshot) to bytes.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for v in text.bytes().filter_map(value) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// Saves the page as `<name>.png` when `AGENTGRAPH_SCREENSHOTS` names a folder.
async fn screenshot(b: &Browser, name: &str) {
    let Ok(dir) = std::env::var("AGENTGRAPH_SCREENSHOTS") else {
        return;
    };
    let png = b.cmd(reqwest::Method::GET, "screenshot", None).await;
    let bytes = base64_decode(png.as_str().expect("base64"));
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    std::fs::write(Path::new(&dir).join(format!("{name}.png")), bytes).expect("write png");
}

async fn state(base: &str, thread: &str) -> Value {
    reqwest::get(format!("{base}/threads/{thread}/state"))
        .await
        .expect("state")
        .json()
        .await
        .expect("json")
}

/// Starts `graph` from its page in the studio on `thread` with `input` fields filled in.
async fn start_from_graph_page(
    b: &Browser,
    base: &str,
    graph: &str,
    thread: &str,
    fields: &[(&str, &str)],
) {
    b.goto(&format!("{base}/#/graph/{graph}")).await;
    b.wait_for("the run form", "document.getElementById('run-start')")
        .await;
    b.js(&format!(
        "document.getElementById('run-thread').value = {};",
        json!(thread)
    ))
    .await;
    for (name, value) in fields {
        b.type_into(&format!("#run-form [name={name}]"), value)
            .await;
    }
    b.click("#run-start").await;
    b.wait_for(
        "the thread view",
        "document.body.dataset.view === 'thread' && document.getElementById('diagram').querySelector('svg')",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn studio_lists_and_draws_the_graphs_folder_before_any_run() {
    let Some((_root, base, stop, b)) = setup(builder_registry()).await else {
        return;
    };
    let compiled: Value = reqwest::get(format!("{base}/graphs"))
        .await
        .expect("graphs")
        .json()
        .await
        .expect("json");
    assert_eq!(compiled["graphs"], json!([]), "nothing has run");
    b.goto(&format!("{base}/")).await;
    b.wait_for(
        "the approval graph drawn",
        "document.querySelector('#graphs .card[data-name=\"examples/approval\"] svg')",
    )
    .await;
    let names: Vec<String> = serde_json::from_value(
        b.js("return Array.from(document.querySelectorAll('#graphs .card')).map(c => c.dataset.name)")
            .await,
    )
    .expect("names");
    for want in [
        "confirm",
        "examples/approval",
        "markdown",
        "workflow-builder/multi-agent",
        "workflow-builder/single-agent",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    // approval.ag: START, review, publish, END, one element each.
    let nodes = b
        .js("return Array.from(document.querySelectorAll('#graphs .card[data-name=\"examples/approval\"] svg .dnode')).map(n => n.dataset.name)")
        .await;
    assert_eq!(nodes, json!(["START", "review", "publish", "END"]));
    let review_shape = b
        .js("return document.querySelector('#graphs .card[data-name=\"examples/approval\"] .dnode[data-name=review] polygon') !== null")
        .await;
    assert_eq!(review_shape, json!(true), "an interrupt node is a hexagon");
    // The builder's subgraphs are drawn nested: multi-agent holds the discovery subgraph.
    b.wait_for(
        "multi-agent drawn",
        "document.querySelector('#graphs .card[data-name=\"workflow-builder/multi-agent\"] svg .dcluster .dnode')",
    )
    .await;
    b.wait_for(
        "every graph drawn",
        "Array.from(document.querySelectorAll('#graphs .card .pic')).every(p => p.querySelector('svg'))",
    )
    .await;
    screenshot(&b, "graphs-list").await;
    b.quit().await;
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread")]
async fn studio_answers_interrupts_with_typed_forms_forks_and_diffs() {
    let Some((_root, base, stop, b)) = setup(builder_registry()).await else {
        return;
    };
    // approval.ag: `decision` is a string, so the answer is typed text.
    start_from_graph_page(
        &b,
        &base,
        "examples/approval",
        "appr-1",
        &[("draft", "Hello")],
    )
    .await;
    b.wait_for(
        "the interrupt form",
        "document.body.dataset.status === 'interrupted' && !document.getElementById('interrupt').hidden && document.getElementById('answer-0')",
    )
    .await;
    let field = b
        .js("const f = document.getElementById('answer-0'); return [f.tagName, f.dataset.type, document.querySelector('#interrupt .ask').dataset.channel, document.querySelector('#interrupt .question').textContent]")
        .await;
    assert_eq!(
        field,
        json!(["TEXTAREA", "string", "decision", "Publish this draft?"])
    );
    let waiting = b
        .js("return Array.from(document.querySelectorAll('#diagram .dnode.active')).map(n => n.dataset.name)")
        .await;
    assert_eq!(
        waiting,
        json!(["review"]),
        "the node waiting is highlighted"
    );
    screenshot(&b, "interrupt-form").await;
    b.type_into("#answer-0", "yes").await;
    b.click("#answer").await;
    b.wait_for(
        "the resumed run to end",
        "document.body.dataset.status === 'done'",
    )
    .await;
    let st = state(&base, "appr-1").await;
    assert_eq!(st["values"]["decision"], "yes", "{st}");
    assert_eq!(st["values"]["published"], true, "{st}");
    b.wait_for(
        "publish drawn as visited",
        "document.querySelector('#diagram .dnode.visited[data-name=publish]')",
    )
    .await;
    screenshot(&b, "thread-done").await;

    // The newest checkpoint against the one before: `published` changed.
    b.click("#tab-history").await;
    b.wait_for(
        "the history",
        "document.querySelectorAll('#history li.cp').length >= 4",
    )
    .await;
    b.js("const cps = document.querySelectorAll('#history li.cp .cp-btn'); cps[cps.length - 1].click();")
        .await;
    b.wait_for("the diff", "document.querySelector('#diff tr.change')")
        .await;
    let changed = b
        .js("return Array.from(document.querySelectorAll('#diff tr.change')).map(r => r.dataset.channel)")
        .await;
    assert_eq!(changed, json!(["published"]));
    screenshot(&b, "state-diff").await;

    // Fork from the checkpoint that waited for the answer: a second branch in the tree.
    assert_eq!(
        b.js("return document.querySelectorAll('#history .branch').length")
            .await,
        json!(0)
    );
    b.click("#tab-history").await;
    b.js("Array.from(document.querySelectorAll('#history li.cp')).find(li => li.textContent.includes('→ review')).querySelector('.cp-btn').click();")
        .await;
    b.wait_for("the fork button", "document.getElementById('fork')")
        .await;
    b.click("#fork").await;
    b.wait_for(
        "the fork's interrupt",
        "document.body.dataset.status === 'interrupted' && !document.getElementById('interrupt').hidden",
    )
    .await;
    b.click("#tab-history").await;
    b.wait_for(
        "two branches",
        "document.querySelectorAll('#history .branch').length === 2",
    )
    .await;
    let forked = b
        .js("return document.querySelectorAll('#history .branch li.cp.forked').length")
        .await;
    assert_eq!(
        forked,
        json!(1),
        "the fork's branch starts with a fork checkpoint"
    );
    screenshot(&b, "history-tree").await;

    // Re-run: the last turn again from its input, one more branch (at the input checkpoint).
    let events_before = b
        .js("return document.querySelectorAll('#events li').length")
        .await;
    b.click("#rerun").await;
    b.wait_for(
        "the re-run's interrupt",
        &format!(
            "document.querySelectorAll('#events li').length > {events_before} && document.body.dataset.status === 'interrupted'"
        ),
    )
    .await;
    b.click("#tab-history").await;
    b.wait_for(
        "a second fork",
        "document.querySelectorAll('#history li.cp.forked').length === 2",
    )
    .await;

    // A bool channel gets a checkbox.
    start_from_graph_page(&b, &base, "confirm", "confirm-1", &[]).await;
    b.wait_for(
        "the interrupt form",
        "document.body.dataset.status === 'interrupted' && document.getElementById('answer-0')",
    )
    .await;
    let field = b
        .js("const f = document.getElementById('answer-0'); return [f.tagName, f.type, f.dataset.type]")
        .await;
    assert_eq!(field, json!(["INPUT", "checkbox", "bool"]));
    b.click("#answer-0").await;
    b.click("#answer").await;
    b.wait_for("the run to end", "document.body.dataset.status === 'done'")
        .await;
    let st = state(&base, "confirm-1").await;
    assert_eq!(st["values"]["approved"], true, "{st}");
    assert_eq!(st["values"]["outcome"], "deleted", "{st}");
    b.quit().await;
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread")]
async fn studio_renders_markdown_without_scripts_or_handlers() {
    let Some((_root, base, stop, b)) = setup(builder_registry()).await else {
        return;
    };
    start_from_graph_page(&b, &base, "markdown", "md-1", &[]).await;
    b.wait_for(
        "the answer and the question",
        "document.querySelector('#messages .msg.ai strong') && document.querySelector('#interrupt .question strong')",
    )
    .await;
    let v = b
        .js("const v = document.getElementById('view'); return {
            scripts: v.querySelectorAll('script').length,
            imgs: v.querySelectorAll('img').length,
            handlers: Array.from(v.querySelectorAll('*')).filter(e => Array.from(e.attributes).some(a => a.name.startsWith('on'))).length,
            js_links: v.querySelectorAll('a[href^=\"javascript\"]').length,
            links: Array.from(v.querySelectorAll('#messages a')).map(a => a.getAttribute('href')),
            h1: v.querySelector('#messages h1').textContent,
            items: v.querySelectorAll('#messages li').length,
            code: v.querySelector('#messages code').textContent,
            shown: v.querySelector('#messages .msg.ai').textContent.includes('<script>'),
            pwned: window.pwned === undefined ? null : window.pwned,
        }")
        .await;
    assert_eq!(v["scripts"], 0, "{v}");
    assert_eq!(v["imgs"], 0, "{v}");
    assert_eq!(v["handlers"], 0, "{v}");
    assert_eq!(v["js_links"], 0, "{v}");
    assert_eq!(v["links"], json!(["https://example.com"]), "{v}");
    assert_eq!(v["h1"], "Title");
    assert_eq!(v["items"], 2);
    assert_eq!(v["code"], "code");
    assert_eq!(v["shown"], true, "the payload shows as text: {v}");
    assert_eq!(v["pwned"], Value::Null, "{v}");
    screenshot(&b, "markdown").await;
    b.quit().await;
    let _ = stop.send(());
}

const PROMPT: &str = "Every Monday, summarize my unread Gmail with AI and email me the summary";

#[tokio::test(flavor = "multi_thread")]
async fn studio_draws_the_builders_workflow_as_a_canvas() {
    // apply_operations waits a little, so the run is seen in progress.
    let Some((_root, base, stop, b)) = setup(slow_registry(Duration::from_millis(300))).await
    else {
        return;
    };
    start_from_graph_page(
        &b,
        &base,
        "workflow-builder/single-agent",
        "wb-1",
        &[("messages", PROMPT)],
    )
    .await;
    b.wait_for(
        "a node highlighted while the run goes on",
        "document.body.dataset.status === 'running' && document.querySelector('#diagram .dnode.active')",
    )
    .await;
    screenshot(&b, "thread-live").await;
    b.wait_for(
        "the build to end",
        "document.body.dataset.status === 'done'",
    )
    .await;
    let st = state(&base, "wb-1").await;
    let wf = &st["values"]["workflow"];
    let nodes = wf["nodes"].as_array().expect("nodes");
    assert!(!nodes.is_empty(), "{wf}");
    b.wait_for(
        "the canvas",
        &format!(
            "document.querySelectorAll('#workflow-canvas .wf-node').length === {}",
            nodes.len()
        ),
    )
    .await;
    let drawn: Vec<(String, f64, f64, String)> = serde_json::from_value(
        b.js("return Array.from(document.querySelectorAll('#workflow-canvas .wf-node')).map(n => [n.dataset.name, Number(n.dataset.x), Number(n.dataset.y), n.dataset.change || ''])")
            .await,
    )
    .expect("nodes");
    for n in nodes {
        let name = n["name"].as_str().expect("name");
        let d = drawn
            .iter()
            .find(|d| d.0 == name)
            .unwrap_or_else(|| panic!("{name} drawn: {drawn:?}"));
        assert_eq!(
            (d.1, d.2),
            (
                n["position"][0].as_f64().expect("x"),
                n["position"][1].as_f64().expect("y")
            ),
            "{name}"
        );
        // The first turn built every node.
        assert_eq!(d.3, "added", "{name}");
    }
    // Sub-node connections (`ai_*`) drawn apart from `main` ones.
    let mut ai = 0;
    let mut main = 0;
    for by_type in wf["connections"].as_object().expect("connections").values() {
        for (kind, outputs) in by_type.as_object().expect("types") {
            let n: usize = outputs
                .as_array()
                .expect("outputs")
                .iter()
                .map(|o| o.as_array().map_or(0, Vec::len))
                .sum();
            if kind == "main" {
                main += n;
            } else {
                ai += n;
            }
        }
    }
    assert!(ai > 0, "the demo workflow has a chat model sub-node");
    let links = b
        .js("return [document.querySelectorAll('#workflow-canvas .link.main').length, document.querySelectorAll('#workflow-canvas .link.ai').length, document.querySelectorAll('#workflow-canvas .link.added').length]")
        .await;
    assert_eq!(links, json!([main, ai, main + ai]));
    // The JSON on demand.
    let json_text = b
        .js("return document.querySelector('#workflow-canvas .wf-json pre').textContent")
        .await;
    let shown: Value = serde_json::from_str(json_text.as_str().expect("text")).expect("json");
    assert_eq!(&shown, wf);
    // Progress lines never stay running once the run ended.
    let running = b
        .js("return document.querySelectorAll('#progress li.running').length")
        .await;
    assert_eq!(running, json!(0));
    assert!(
        b.js("return document.querySelectorAll('#progress li').length")
            .await
            .as_u64()
            .unwrap_or(0)
            > 0
    );
    b.js("document.getElementById('workflow-canvas').scrollIntoView()")
        .await;
    screenshot(&b, "builder-canvas").await;

    // A later turn: only what it added or changed is highlighted.
    let marks = b
        .js("const wf = {nodes: [{name: 'A', type: 't', position: [0, 0], parameters: {x: 1}}, {name: 'B', type: 't', position: [200, 0]}, {name: 'M', type: '@n8n/n8n-nodes-langchain.lmChatOpenAi', position: [200, 200]}], connections: {A: {main: [[{node: 'B', type: 'main', index: 0}]]}, M: {ai_languageModel: [[{node: 'B', type: 'ai_languageModel', index: 0}]]}}};
             const prev = {nodes: [{name: 'A', type: 't', position: [0, 0], parameters: {x: 0}}, {name: 'B', type: 't', position: [200, 0]}], connections: {A: {main: [[{node: 'B', type: 'main', index: 0}]]}}};
             const c = Canvas.render(wf, prev);
             return [Array.from(c.querySelectorAll('.wf-node')).map(n => n.dataset.name + ':' + (n.dataset.change || '')),
                     Array.from(c.querySelectorAll('.link')).map(l => l.dataset.type + ':' + (l.dataset.change || ''))];")
        .await;
    assert_eq!(
        marks,
        json!([
            ["A:changed", "B:", "M:added"],
            ["main:", "ai_languageModel:added"]
        ])
    );
    b.quit().await;
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread")]
async fn studio_highlights_a_running_node_inside_its_subgraph() {
    let Some((_root, base, stop, b)) = setup(slow_registry(Duration::from_millis(300))).await
    else {
        return;
    };
    start_from_graph_page(
        &b,
        &base,
        "workflow-builder/multi-agent",
        "ma-1",
        &[("messages", PROMPT)],
    )
    .await;
    // A subgraph's node, found from the event's namespace inside its parent's box, both lit.
    let lit = b
        .wait_for(
            "a node inside a subgraph highlighted",
            "document.body.dataset.status === 'running' && Array.from(document.querySelectorAll('#diagram .dcluster.active .dnode.active')).map(n => n.dataset.path + ' > ' + n.dataset.name)[0]",
        )
        .await;
    let lit = lit.as_str().expect("text").to_string();
    let sub = lit.split(" > ").next().unwrap_or("");
    assert!(
        ["discovery", "builder", "configurator"].contains(&sub),
        "{lit}"
    );
    screenshot(&b, "thread-live-subgraph").await;
    b.wait_for(
        "the build to end",
        "document.body.dataset.status === 'done'",
    )
    .await;
    assert_eq!(
        b.js("return document.querySelectorAll('#diagram .active').length")
            .await,
        json!(0),
        "nothing stays lit after the run"
    );
    b.quit().await;
    let _ = stop.send(());
}

/// With API keys on, the studio loads without one, its JSON calls are refused until the key is
/// typed into its field, then go through (the event stream too) as that principal.
#[tokio::test(flavor = "multi_thread")]
async fn studio_sends_its_api_key_when_the_server_needs_one() {
    let Some(found) = agentgraph_test_support::require_browser() else {
        return;
    };
    let root = tempfile::tempdir().expect("tempdir");
    let keys = agentgraph_server::auth::KeyStore::in_dir(&root.path().join("db"));
    let (_, key) = keys.create("studio", None, None, vec![]).expect("key");
    let (base, stop) = start_server(root.path(), builder_registry()).await;
    let b = Browser::start(&found.chromedriver, &found.chromium).await;
    b.goto(&format!("{base}/")).await;
    let error = b
        .wait_for(
            "the list refused",
            "document.getElementById('error').textContent",
        )
        .await;
    assert!(error.as_str().unwrap_or("").starts_with("401"), "{error}");
    b.js(&format!(
        "const k = document.getElementById('apikey'); k.value = '{key}'; \
         k.dispatchEvent(new Event('change'));"
    ))
    .await;
    b.wait_for("the graphs", "document.querySelector('#graphs .card svg')")
        .await;
    start_from_graph_page(
        &b,
        &base,
        "examples/approval",
        "keyed-1",
        &[("draft", "Hi")],
    )
    .await;
    b.wait_for(
        "the interrupt over the keyed stream",
        "document.body.dataset.connected && document.body.dataset.status === 'interrupted' && document.getElementById('answer-0')",
    )
    .await;
    let http = reqwest::Client::new();
    let st = http
        .get(format!("{base}/threads/keyed-1/state"))
        .send()
        .await
        .expect("get");
    assert_eq!(st.status().as_u16(), 401);
    let st = http
        .get(format!("{base}/threads/keyed-1/state"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("get");
    assert_eq!(
        st.status().as_u16(),
        200,
        "the run belongs to the key's principal"
    );
    b.quit().await;
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread")]
async fn studio_shows_a_threads_background_tasks() {
    let Some((_root, base, stop, b)) = setup(builder_registry()).await else {
        return;
    };
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{base}/threads/tasks-1/runs"))
        .json(&json!({"graph": "tasks", "input": {"messages": [
            {"type": "human", "id": "h1", "content": "start it"}]}}))
        .send()
        .await
        .expect("post");
    assert_eq!(r.status().as_u16(), 202);
    // The run ends at once; the task ends on its own.
    let start = std::time::Instant::now();
    loop {
        let v: Value = reqwest::get(format!("{base}/threads/tasks-1/tasks"))
            .await
            .expect("tasks")
            .json()
            .await
            .expect("json");
        let s = state(&base, "tasks-1").await;
        if v["tasks"][0]["state"] == "done" && s["active"] == false {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{v}\n{s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.goto(&format!("{base}/#/thread/tasks-1")).await;
    b.wait_for(
        "the task list",
        "document.querySelector('#background-tasks li[data-state=done]')",
    )
    .await;
    let v = b
        .js("const li = document.querySelector('#background-tasks li');
            return { id: li.dataset.id, text: li.textContent,
                     cancel: li.querySelectorAll('button.cancel-task').length,
                     title: document.querySelector('#background-tasks h2').textContent };")
        .await;
    assert_eq!(v["id"], "notes", "{v}");
    assert_eq!(v["title"], "Background tasks", "{v}");
    let text = v["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("summariser: summarise notes") && text.contains("Summary ready."),
        "{v}"
    );
    assert_eq!(v["cancel"], 0, "a finished task has no cancel button: {v}");
    screenshot(&b, "background-tasks").await;
    b.quit().await;
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread")]
async fn studio_shows_a_threads_plan() {
    let Some((_root, base, stop, b)) = setup(builder_registry()).await else {
        return;
    };
    let r = reqwest::Client::new()
        .post(format!("{base}/threads/plan-1/runs"))
        .json(&json!({"graph": "planned"}))
        .send()
        .await
        .expect("post");
    assert_eq!(r.status().as_u16(), 202);
    let start = std::time::Instant::now();
    while state(&base, "plan-1").await["active"] != false {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the run did not end"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.goto(&format!("{base}/#/thread/plan-1")).await;
    b.wait_for("the plan", "document.querySelector('#plan li.plan-task')")
        .await;
    let v = b
        .js(
            "const rows = [...document.querySelectorAll('#plan li.plan-task')];
            return { rows: rows.map((li) => ({ id: li.dataset.id, status: li.dataset.status,
                                                 text: li.textContent })),
                     approved: document.getElementById('plan').dataset.approved,
                     title: document.querySelector('#plan h2').textContent };",
        )
        .await;
    assert_eq!(v["rows"][0]["id"], "look", "{v}");
    assert_eq!(v["rows"][0]["status"], "succeeded", "{v}");
    assert_eq!(v["rows"][1]["id"], "build", "{v}");
    assert_eq!(v["rows"][1]["status"], "pending", "{v}");
    let first = v["rows"][0]["text"].as_str().unwrap_or_default();
    let second = v["rows"][1]["text"].as_str().unwrap_or_default();
    assert!(
        first.contains("Find the API") && first.contains("It has a REST API."),
        "{v}"
    );
    assert!(
        second.contains("build-workflow") && second.contains("after look"),
        "{v}"
    );
    assert_eq!(v["approved"], "no", "{v}");
    assert!(
        v["title"]
            .as_str()
            .unwrap_or_default()
            .contains("awaiting approval"),
        "{v}"
    );
    screenshot(&b, "plan").await;
    b.quit().await;
    let _ = stop.send(());
}
