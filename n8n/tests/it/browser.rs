//! The builder's chat page (at `/chat`, as `agentgraph serve` serves it) in headless Chromium, driven over chromedriver's W3C WebDriver HTTP
//! API (plain reqwest, no WebDriver crate), against the single-agent builder with the scripted
//! model: a prompt builds the "Weekly Email Summary" workflow with live tool progress, and a
//! reload mid-run replays the missed events so every progress event shows exactly once.
//!
//! It sets `AGENTGRAPH_PROVIDER=scripted` for the whole test process (no other server test
//! depends on it). Skips when chromium or chromedriver is not installed (a failure under
//! `CI=true`); `.ci/run` installs the Debian packages `chromium` and `chromium-driver`.

use agentgraph_dsl::registry::{NodeBuild, NodeFactory};
use agentgraph_n8n::{CatalogueSource, N8n, RegistryFactory, CHAT_PAGE};
use agentgraph_runtime::{node_fn, Node};
use agentgraph_server::{serve_on, Page, ServerConfig, ServerState};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PROMPT: &str = "Every Monday, summarize my unread Gmail with AI and email me the summary";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// A temp graphs folder with the builder graphs, their prompts and the demo scripts.
pub(crate) fn builder_graphs(root: &Path) -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/workflow-builder");
    let dst = root.join("graphs/workflow-builder");
    std::fs::create_dir_all(&dst).expect("mkdir");
    for entry in std::fs::read_dir(&src).expect("read_dir") {
        let p = entry.expect("entry").path();
        if p.extension().is_some_and(|e| e == "ag") {
            std::fs::copy(&p, dst.join(p.file_name().expect("name"))).expect("copy");
        }
    }
    copy_dir(&src.join("prompts"), &dst.join("prompts"));
    copy_dir(&src.join("scripts/demo"), &dst.join("scripts/demo"));
    root.join("graphs")
}

/// Builds a kind's nodes, each sleeping before it runs.
struct Slow(Arc<dyn NodeFactory>, Duration);

impl NodeFactory for Slow {
    fn build(&self, b: &NodeBuild<'_>) -> Result<Arc<dyn Node>, String> {
        let (inner, delay) = (self.0.build(b)?, self.1);
        Ok(node_fn(move |ctx| {
            let inner = inner.clone();
            async move {
                tokio::time::sleep(delay).await;
                inner.run(ctx).await
            }
        }))
    }
}

/// The builder's registry over the built-in catalogue.
pub(crate) fn builder_registry() -> RegistryFactory {
    N8n::new(CatalogueSource::Builtin).registry_factory()
}

/// The builder's registry, where `apply_operations` (after every tool batch of the builder)
/// waits `delay` first: the scripted run takes long enough to reload the page in the middle.
pub(crate) fn slow_registry(delay: Duration) -> RegistryFactory {
    let base = builder_registry();
    Arc::new(move || {
        let mut reg = base();
        let kind = reg
            .kinds
            .get_mut("apply_operations")
            .expect("apply_operations kind");
        let inner = kind.factory.take().expect("a factory");
        kind.factory = Some(Arc::new(Slow(inner, delay)));
        reg
    })
}

/// The server on a free port, with the scripted model.
async fn start_server(
    root: &Path,
    registry: Option<RegistryFactory>,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    std::env::set_var("AGENTGRAPH_PROVIDER", "scripted");
    let mut config = ServerConfig::new(builder_graphs(root), root.join("db"))
        .registry(registry.unwrap_or_else(builder_registry))
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

/// A chromedriver process and one headless browser session; both end on drop.
pub(crate) struct Browser {
    http: reqwest::Client,
    driver: Child,
    url: String,
    session: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
    pub(crate) async fn start(driver: &Path, chrome: &Path) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("free port")
            .local_addr()
            .expect("addr")
            .port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chromedriver");
        let mut b = Browser {
            http: reqwest::Client::new(),
            driver: child,
            url: format!("http://127.0.0.1:{port}"),
            session: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ready = b.http.get(format!("{}/status", b.url)).send().await;
            if let Ok(r) = ready {
                let v: Value = r.json().await.unwrap_or(Value::Null);
                if v["value"]["ready"] == json!(true) {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chrome,
                "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                         "--disable-gpu", "--window-size=1200,900"],
            },
        }}});
        let v = b.cmd(reqwest::Method::POST, "session", Some(caps)).await;
        b.session = v["sessionId"].as_str().expect("session id").to_string();
        b
    }

    /// One WebDriver command; panics with the driver's error.
    pub(crate) async fn cmd(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Value {
        let v = self.raw_cmd(method, path, body).await;
        assert!(v["value"]["error"].is_null(), "webdriver {path}: {v}");
        v["value"].clone()
    }

    /// One WebDriver command; the driver's whole answer, error or not.
    async fn raw_cmd(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = if self.session.is_empty() {
            format!("{}/{path}", self.url)
        } else {
            format!("{}/session/{}/{path}", self.url, self.session)
        };
        let url = url.trim_end_matches('/').to_string();
        let mut req = self.http.request(method, url);
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send()
            .await
            .expect("webdriver")
            .json()
            .await
            .expect("json")
    }

    pub(crate) async fn goto(&self, url: &str) {
        self.cmd(reqwest::Method::POST, "url", Some(json!({ "url": url })))
            .await;
    }

    pub(crate) async fn refresh(&self) {
        self.cmd(reqwest::Method::POST, "refresh", Some(json!({})))
            .await;
    }

    pub(crate) async fn js(&self, script: &str) -> Value {
        self.cmd(
            reqwest::Method::POST,
            "execute/sync",
            Some(json!({ "script": script, "args": [] })),
        )
        .await
    }

    pub(crate) async fn element(&self, css: &str) -> String {
        let v = self
            .cmd(
                reqwest::Method::POST,
                "element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v["element-6066-11e4-a52e-4f735466cecf"]
            .as_str()
            .expect("element id")
            .to_string()
    }

    /// Types `text` into the element `css` names, retrying like [`Browser::click`].
    pub(crate) async fn type_into(&self, css: &str, text: &str) {
        self.act_on(css, "value", json!({ "text": text })).await;
    }

    /// Clicks the element `css` names, retrying like [`Browser::act_on`].
    pub(crate) async fn click(&self, css: &str) {
        self.act_on(css, "click", json!({})).await;
    }

    /// Sends one element command (`click`, `value`). A page that is still laying the element
    /// out (or has just drawn it again) answers "not interactable" or "stale" before acting:
    /// the element is found again and the command retried, for up to ten seconds.
    async fn act_on(&self, css: &str, action: &str, body: Value) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let el = self.element(css).await;
            let v = self
                .raw_cmd(
                    reqwest::Method::POST,
                    &format!("element/{el}/{action}"),
                    Some(body.clone()),
                )
                .await;
            let error = v["value"]["error"].as_str().unwrap_or("");
            let retryable = matches!(
                error,
                "element not interactable"
                    | "stale element reference"
                    | "element click intercepted"
            );
            if error.is_empty() {
                return;
            }
            assert!(
                retryable && Instant::now() < deadline,
                "webdriver {action} {css}: {v}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Polls `script` (a JS expression) until it is truthy; returns its value.
    pub(crate) async fn wait_for(&self, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let v = self.js(&format!("return ({script});")).await;
            if !(v.is_null() || v == json!(false) || v == json!(0) || v == json!("")) {
                return v;
            }
            if Instant::now() > deadline {
                let page = self
                    .js("return document.body.innerText + '\\nstatus=' + document.body.dataset.status")
                    .await;
                panic!(
                    "timed out waiting for {what}; page:\n{}",
                    page.as_str().unwrap_or("")
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(crate) async fn quit(self) {
        self.cmd(reqwest::Method::DELETE, "", None).await;
    }
}

/// The ids of the tool-progress (`custom` with a `tool`) events in the thread's whole log.
async fn server_progress_ids(base: &str, thread: &str) -> Vec<u64> {
    let resp = reqwest::get(format!("{base}/threads/{thread}/events?lastEventId=0"))
        .await
        .expect("sse");
    let mut events = resp.bytes_stream().eventsource();
    let mut ids = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("in time")
            .expect("open")
            .expect("event");
        let data: Value = serde_json::from_str(&ev.data).expect("json");
        if data["mode"] == "custom" && data["data"]["tool"].is_string() {
            ids.push(data["seq"].as_u64().expect("seq"));
        }
        if data["mode"] == "run" && data["data"]["status"] != "started" {
            return ids;
        }
    }
}

/// The chat's messages as `[class, text]` pairs.
const CHAT: &str = "return Array.from(document.querySelectorAll('#chat .msg')).map(m => [m.className, m.textContent])";

/// Asserts the chat shows the prompt once and the demo's answer once.
async fn assert_chat(b: &Browser) {
    let chat = b.js(CHAT).await;
    let msgs: Vec<(String, String)> = serde_json::from_value(chat.clone()).expect("pairs");
    let human: Vec<_> = msgs.iter().filter(|(c, _)| c == "msg human").collect();
    assert_eq!(human.len(), 1, "{chat}");
    assert_eq!(human[0].1, PROMPT);
    let answers = msgs
        .iter()
        .filter(|(c, t)| c == "msg ai" && t.contains("I built **Weekly Email Summary**"))
        .count();
    assert_eq!(answers, 1, "the answer once: {chat}");
}

const PROGRESS_IDS: &str =
    "Array.from(document.querySelectorAll('#progress li')).map(li => Number(li.dataset.seq))";
const FINISHED: &str = "['done','interrupted','failed','cancelled'].includes(document.body.dataset.status) && document.body.dataset.status";

async fn setup(
    registry: Option<RegistryFactory>,
) -> Option<(
    tempfile::TempDir,
    String,
    tokio::sync::oneshot::Sender<()>,
    Browser,
)> {
    let found = agentgraph_test_support::require_browser()?;
    let (driver, chrome) = (found.chromedriver, found.chromium);
    let root = tempfile::tempdir().expect("tempdir");
    let (base, stop) = start_server(root.path(), registry).await;
    let browser = Browser::start(&driver, &chrome).await;
    Some((root, base, stop, browser))
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_page_builds_the_workflow_with_live_tool_progress() {
    let Some((_root, base, stop, b)) = setup(None).await else {
        return;
    };
    let started = Instant::now();
    let page = reqwest::get(format!("{base}/chat")).await.expect("get /");
    assert_eq!(page.status().as_u16(), 200);
    let ctype = page.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .to_string();
    assert!(ctype.starts_with("text/html"), "{ctype}");

    b.goto(&format!("{base}/chat")).await;
    let thread = b
        .wait_for("a thread id", "document.getElementById('thread').value")
        .await;
    let thread = thread.as_str().expect("thread id").to_string();
    assert!(
        b.js("return location.search")
            .await
            .as_str()
            .unwrap_or("")
            .contains(&thread),
        "the thread id is kept in the URL"
    );
    b.wait_for("the event stream", "document.body.dataset.connected")
        .await;
    b.type_into("#msg", PROMPT).await;
    b.click("#send").await;

    let status = b.wait_for("the run to end", FINISHED).await;
    assert_eq!(status, json!("done"));
    b.wait_for(
        "the workflow",
        "document.getElementById('workflow').textContent.includes('Weekly Email Summary')",
    )
    .await;
    let wf: Value = serde_json::from_str(
        b.js("return document.getElementById('workflow').textContent")
            .await
            .as_str()
            .expect("text"),
    )
    .expect("workflow JSON");
    assert_eq!(wf["name"], "Weekly Email Summary");
    assert_eq!(wf["nodes"].as_array().map(Vec::len), Some(6), "{wf}");
    let lines = b
        .js("return Array.from(document.querySelectorAll('#progress li')).map(li => li.className + ' ' + li.textContent)")
        .await;
    let lines: Vec<&str> = lines
        .as_array()
        .expect("lines")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        lines.iter().any(|l| l.starts_with("completed add_nodes")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("completed connect_nodes")),
        "{lines:?}"
    );
    assert_chat(&b).await;
    let error = b
        .js("return document.getElementById('error').textContent")
        .await;
    assert_eq!(error, json!(""));
    let ids: Vec<u64> =
        serde_json::from_value(b.js(&format!("return {PROGRESS_IDS}")).await).expect("ids");
    assert_eq!(ids, server_progress_ids(&base, &thread).await);
    println!("scenario 1 in {:?}", started.elapsed());
    b.quit().await;
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_page_reload_mid_run_replays_every_event_once() {
    let Some((_root, base, stop, b)) = setup(Some(slow_registry(Duration::from_millis(300)))).await
    else {
        return;
    };
    let started = Instant::now();
    let thread = "reload-1";
    b.goto(&format!("{base}/chat?thread={thread}")).await;
    b.wait_for("the event stream", "document.body.dataset.connected")
        .await;
    b.type_into("#msg", PROMPT).await;
    b.click("#send").await;
    b.wait_for(
        "a first progress line",
        "document.querySelector('#progress li')",
    )
    .await;
    let before = b
        .js("return [document.body.dataset.seen, document.body.dataset.status]")
        .await;
    let server_active: Value = reqwest::get(format!("{base}/threads/{thread}/state"))
        .await
        .expect("state")
        .json()
        .await
        .expect("json");
    assert_eq!(
        server_active["active"],
        json!(true),
        "the reload happens mid-run"
    );
    b.refresh().await;
    let status = b
        .wait_for("the run to end after the reload", FINISHED)
        .await;
    assert_eq!(status, json!("done"));
    assert_eq!(
        before[1],
        json!("running"),
        "the page saw the run in progress"
    );
    let before_seen = before[0].as_str().unwrap_or("").split(',').count();

    // After the reload the page handled every event of the run exactly once, in id order
    // (replayed, then live), and shows every progress event of the server's log once.
    let seen: Vec<u64> = b
        .js("return document.body.dataset.seen.split(',').map(Number)")
        .await
        .as_array()
        .expect("seen")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    let n = *seen.last().expect("some events");
    assert_eq!(
        seen,
        (1..=n).collect::<Vec<_>>(),
        "contiguous, no duplicates"
    );
    let ids: Vec<u64> =
        serde_json::from_value(b.js(&format!("return {PROGRESS_IDS}")).await).expect("ids");
    let expected = server_progress_ids(&base, thread).await;
    assert!(!expected.is_empty());
    assert_eq!(ids, expected, "every progress event exactly once");
    b.wait_for(
        "the workflow",
        "document.getElementById('workflow').textContent.includes('Weekly Email Summary')",
    )
    .await;
    assert_chat(&b).await;
    println!(
        "scenario 2 in {:?}: reloaded after {before_seen} of {n} events, {} progress lines",
        started.elapsed(),
        ids.len()
    );
    b.quit().await;
    let _ = stop.send(());
}

/// A one-question graph for the approve/deny buttons (the builder demo never interrupts).
pub(crate) const CONFIRM_AG: &str = r#"
graph confirm {
  state {
    messages: messages
    approved: bool = false
    outcome: string = ""
  }
  node ask: interrupt {
    value: { question: "Delete 3 nodes?" }
    write: approved
  }
  node apply {
    set { outcome: "deleted" }
  }
  START -> ask
  ask -> route {
    approved == true => apply
    else             => END
  }
  apply -> END
}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn chat_page_answers_interrupts_and_shows_errors() {
    let Some((root, base, stop, b)) = setup(None).await else {
        return;
    };
    std::fs::write(root.path().join("graphs/confirm.ag"), CONFIRM_AG).expect("write graph");
    let thread = "hitl-1";

    // A graph that does not exist: the API error is shown as is.
    b.goto(&format!("{base}/chat?thread={thread}&graph=no-such-graph"))
        .await;
    b.wait_for("the event stream", "document.body.dataset.connected")
        .await;
    b.type_into("#msg", "hello").await;
    b.click("#send").await;
    let error = b
        .wait_for("an error", "document.getElementById('error').textContent")
        .await;
    assert!(error.as_str().unwrap_or("").contains("404"), "{error}");

    // The interrupt's question with approve/deny; approving resumes the run to its end.
    b.goto(&format!("{base}/chat?thread={thread}&graph=confirm"))
        .await;
    b.wait_for("the event stream", "document.body.dataset.connected")
        .await;
    b.type_into("#msg", "delete the unused nodes").await;
    b.click("#send").await;
    b.wait_for(
        "the interrupt",
        "!document.getElementById('interrupt').hidden && document.getElementById('interrupt-text').textContent",
    )
    .await;
    let text = b
        .js("return document.getElementById('interrupt-text').textContent")
        .await;
    assert!(
        text.as_str().unwrap_or("").contains("Delete 3 nodes?"),
        "{text}"
    );
    assert_eq!(
        b.js("return document.body.dataset.status").await,
        json!("interrupted")
    );
    b.click("#approve").await;
    b.wait_for(
        "the resumed run to end",
        "document.body.dataset.status === 'done'",
    )
    .await;
    assert_eq!(
        b.js("return document.getElementById('interrupt').hidden")
            .await,
        json!(true)
    );
    let state: Value = reqwest::get(format!("{base}/threads/{thread}/state"))
        .await
        .expect("state")
        .json()
        .await
        .expect("json");
    assert_eq!(state["values"]["outcome"], "deleted", "{state}");
    assert_eq!(state["values"]["approved"], true, "{state}");

    // approval.ag writes the answer to a string channel: Approve sends "yes" there.
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples/approval.ag");
    std::fs::copy(shipped, root.path().join("graphs/approval.ag")).expect("copy approval.ag");
    // (Started through the API: the page only sends messages, which approval.ag does not take.)
    let started = reqwest::Client::new()
        .post(format!("{base}/threads/hitl-2/runs"))
        .json(&json!({"graph": "approval", "input": {"draft": "Hello"}}))
        .send()
        .await
        .expect("start");
    assert_eq!(started.status().as_u16(), 202);
    b.goto(&format!("{base}/chat?thread=hitl-2&graph=approval"))
        .await;
    b.wait_for(
        "the interrupt",
        "!document.getElementById('interrupt').hidden && document.body.dataset.status === 'interrupted'",
    )
    .await;
    b.click("#approve").await;
    b.wait_for(
        "the approved run to end",
        "document.body.dataset.status === 'done'",
    )
    .await;
    let state: Value = reqwest::get(format!("{base}/threads/hitl-2/state"))
        .await
        .expect("state")
        .json()
        .await
        .expect("json");
    assert_eq!(state["values"]["decision"], "yes", "{state}");
    assert_eq!(state["values"]["published"], true, "{state}");
    b.quit().await;
    let _ = stop.send(());
}

/// With API keys on, the page still loads without one; the key typed into its "API key" field
/// (kept in localStorage) goes with its requests and its event stream, and the run it starts
/// belongs to that key's principal.
#[tokio::test(flavor = "multi_thread")]
async fn chat_page_sends_its_api_key_when_the_server_needs_one() {
    let Some(found) = agentgraph_test_support::require_browser() else {
        return;
    };
    let root = tempfile::tempdir().expect("tempdir");
    let keys = agentgraph_server::auth::KeyStore::in_dir(&root.path().join("db"));
    let (_, key) = keys.create("page", None, None, vec![]).expect("key");
    let (base, stop) = start_server(root.path(), None).await;
    let b = Browser::start(&found.chromedriver, &found.chromium).await;
    b.goto(&format!("{base}/chat?thread=keyed-1")).await;
    b.wait_for(
        "the stream refused without a key",
        "document.getElementById('error').textContent",
    )
    .await;
    b.js(&format!(
        "const k = document.getElementById('apikey'); k.value = '{key}'; \
         k.dispatchEvent(new Event('change'));"
    ))
    .await;
    b.wait_for("the event stream", "document.body.dataset.connected")
        .await;
    b.type_into("#msg", PROMPT).await;
    b.click("#send").await;
    let status = b.wait_for("the run to end", FINISHED).await;
    assert_eq!(status, json!("done"));
    assert_chat(&b).await;
    assert_eq!(
        b.js("return localStorage.getItem('agentgraph:apiKey')")
            .await,
        json!(key)
    );
    let http = reqwest::Client::new();
    let state = |k: Option<&str>| {
        let mut r = http.get(format!("{base}/threads/keyed-1/state"));
        if let Some(k) = k {
            r = r.bearer_auth(k);
        }
        r.send()
    };
    assert_eq!(state(None).await.expect("get").status().as_u16(), 401);
    assert_eq!(state(Some(&key)).await.expect("get").status().as_u16(), 200);
    b.quit().await;
    let _ = stop.send(());
}
