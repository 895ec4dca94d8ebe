//! Deploying to n8n from `agentgraph chat --n8n` and `agentgraph serve --n8n`, against the real
//! n8n of `require_n8n()` (skipped without it, failing under `CI=true`) and against loopback
//! mocks standing in for n8n (a rejection, a server error, a closed port).
//!
//! The model is scripted (`cli/tests/chat/deploy/single.json`): turn 1 builds "Hourly Greeting"
//! (a schedule trigger and a Set node whose `greeting` field is `hello`), turn 2 ("Make the
//! greeting say goodbye") sets it to `goodbye`. `cli/tests/chat/rejected/` is the same script
//! whose turn 2 is only given to a request carrying n8n's rejection. The builder tools use the
//! built-in catalogue. Workflows created in the real n8n are deleted when a test ends.

mod chat;
mod mock;
mod serve;

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const TURN1: &str = "Every hour, set a greeting";
pub const TURN2: &str = "Make the greeting say goodbye";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scripts(name: &str) -> PathBuf {
    root().join("cli/tests/chat").join(name)
}

/// `agentgraph --db DB ARGS` from the repository root with the scripted model (`scripts`),
/// the built-in catalogue and n8n at `url` with `key`; nothing else from the environment that
/// chooses a provider or an n8n.
fn command(db: &Path, scripts: &Path, url: &str, key: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    c.current_dir(root()).arg("--db").arg(db).args(args);
    for v in crate::scenario::PROVIDER_VARS {
        c.env_remove(v);
    }
    c.env("AGENTGRAPH_PROVIDER", "scripted")
        .env("AGENTGRAPH_DATA_DIR", crate::NO_DATA_DIR)
        .env("AGENTGRAPH_SCRIPT_DIR", scripts)
        .env("N8N_API_URL", url)
        .env("N8N_API_KEY", key);
    c
}

/// A `chat` session on `thread` with `input` on stdin; it must exit 0. Returns stdout and
/// stderr together.
fn chat(db: &Path, scripts: &Path, (url, key): (&str, &str), args: &[&str], input: &str) -> String {
    let mut all = vec!["chat"];
    all.extend_from_slice(args);
    let mut child = command(db, scripts, url, key, &all)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agentgraph binary runs");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("stdin written");
    let o = child.wait_with_output().expect("chat ends");
    let text = both(&o);
    assert!(o.status.success(), "exit {:?}\n{text}", o.status.code());
    text
}

fn both(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The latest state values of `thread` (`agentgraph state`).
fn thread_values(db: &Path, thread: &str) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .current_dir(root())
        .arg("--db")
        .arg(db)
        .args(["state", "graphs/workflow-builder/single-agent.ag"])
        .args(["--thread", thread])
        .output()
        .expect("agentgraph state runs");
    assert!(o.status.success(), "{}", both(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("state is JSON");
    v["values"].clone()
}

/// What n8n keeps of a workflow and the comparison needs: the name, each node's name, type
/// and parameters (sorted by name), the connections.
fn kept(wf: &Value) -> Value {
    let mut nodes: Vec<Value> = wf["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| json!({"name": n["name"], "type": n["type"], "parameters": n["parameters"]}))
        .collect();
    nodes.sort_by_key(|n| n["name"].as_str().unwrap_or_default().to_string());
    json!({"name": wf["name"], "nodes": nodes, "connections": wf["connections"]})
}

/// The `greeting` value the Set node "Greeting" assigns.
fn greeting(wf: &Value) -> Value {
    wf["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["name"] == "Greeting")
        .map(|n| n["parameters"]["assignments"]["assignments"][0]["value"].clone())
        .unwrap_or(Value::Null)
}

/// The id in the first `n8n: <action> workflow <id>: <url>` line of a session.
fn workflow_id(text: &str, action: &str) -> Option<String> {
    let prefix = format!("n8n: {action} workflow ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(':').next())
        .map(str::to_string)
}

/// The real n8n's workflows, read and deleted with plain HTTP (not the client under test).
struct RealN8n {
    url: String,
    key: String,
    /// Workflows to delete when the test ends.
    created: std::sync::Mutex<Vec<String>>,
}

impl RealN8n {
    fn new(inst: &agentgraph_test_support::N8nInstance) -> RealN8n {
        RealN8n {
            url: inst.url.trim_end_matches('/').to_string(),
            key: inst.api_key.clone(),
            created: Default::default(),
        }
    }

    fn env(&self) -> (&str, &str) {
        (&self.url, &self.key)
    }

    fn track(&self, id: &str) {
        self.created
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(id.to_string());
    }

    /// Workflow `id` as n8n has it (a blocking call on its own thread, so async tests may use
    /// it too).
    fn workflow(&self, id: &str) -> Value {
        let (url, key) = (
            format!("{}/api/v1/workflows/{id}", self.url),
            self.key.clone(),
        );
        std::thread::spawn(move || {
            let r = reqwest::blocking::Client::new()
                .get(&url)
                .header("X-N8N-API-KEY", key)
                .send()
                .expect("n8n answers");
            assert_eq!(r.status().as_u16(), 200, "GET {url}");
            r.json::<Value>().expect("a workflow")
        })
        .join()
        .expect("the request thread")
    }
}

impl Drop for RealN8n {
    fn drop(&mut self) {
        let ids = std::mem::take(&mut *self.created.lock().unwrap_or_else(|p| p.into_inner()));
        let (base, key) = (self.url.clone(), self.key.clone());
        let _ = std::thread::spawn(move || {
            let http = reqwest::blocking::Client::new();
            for id in ids {
                let url = format!("{base}/api/v1/workflows/{id}");
                let _ = http
                    .post(format!("{url}/deactivate"))
                    .header("X-N8N-API-KEY", &key)
                    .send();
                match http.delete(&url).header("X-N8N-API-KEY", &key).send() {
                    Ok(r) if r.status().is_success() => {}
                    other => eprintln!("could not delete n8n workflow {id}: {other:?}"),
                }
            }
        })
        .join();
    }
}
