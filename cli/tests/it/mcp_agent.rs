//! `agentgraph run graphs/examples/mcp_files.ag`: a ReAct agent whose tools come from the real
//! filesystem MCP server (npm), offline with the scripted model and over the OpenAI wire format
//! (a loopback server replaying the same script), plus the errors a broken server gives.

use crate::react_agent::{final_json, Out, PROVIDER_VARS};
use crate::wire::{offered_tools, Replay, Wire};
use agentgraph_test_support::require_mcp_servers;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

const QUESTION: &str = "How many units are in the warehouse?";

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples")
}

/// Runs `graph` with the MCP servers' folder first on the PATH and `env` as provider settings.
fn run(dir: &Path, bin: &Path, graph: &Path, env: &[(&str, &str)]) -> Out {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let input = json!({ "question": QUESTION }).to_string();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    cmd.current_dir(dir)
        .arg("--db")
        .arg(dir.join("db"))
        .args(["run", &graph.display().to_string(), "--thread", "t1"])
        .args(["--input", &input, "--json"])
        .env("NO_COLOR", "1")
        .env("PATH", path)
        .env_remove("MCP_FILESYSTEM_SERVER");
    for v in PROVIDER_VARS {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("the agentgraph binary runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn messages(dir: &Path, graph: &Path) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
        .current_dir(dir)
        .arg("--db")
        .arg(dir.join("db"))
        .args([
            "state",
            &graph.display().to_string(),
            "--thread",
            "t1",
            "--json",
        ])
        .env("AGENTGRAPH_PROVIDER", "scripted")
        .output()
        .expect("the agentgraph binary runs");
    let out = Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    };
    final_json(&out)["values"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn tool_result<'a>(messages: &'a [Value], name: &str) -> &'a Value {
    messages
        .iter()
        .find(|m| m["type"] == "tool" && m["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` tool message in {messages:?}"))
}

/// What the real server answered, checked against the files on disk (not against the script).
fn assert_real_results(messages: &[Value]) {
    let listing = tool_result(messages, "list_directory");
    assert!(listing.get("status").is_none(), "a failed call: {listing}");
    assert!(
        listing["content"]
            .as_str()
            .is_some_and(|t| t.contains("[FILE] stock.md")),
        "{listing}"
    );
    let read = tool_result(messages, "read_text_file");
    let on_disk = std::fs::read_to_string(examples().join("data/stock.md")).expect("stock.md");
    assert_eq!(read["content"].as_str(), Some(on_disk.as_str()), "{read}");
    assert_eq!(
        tool_result(messages, "calculator")["content"]["result"],
        46.0
    );
}

#[test]
fn the_agent_reads_files_through_the_filesystem_server_offline() {
    let Some(bin) = require_mcp_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let graph = examples().join("mcp_files.ag");
    let out = run(dir.path(), &bin, &graph, &[]);
    let v = final_json(&out);
    let answer = v["answer"].as_str().unwrap_or_default();
    assert!(answer.contains("46 units"), "{v}");
    assert_real_results(&messages(dir.path(), &graph));
}

/// The example with its model swapped for an OpenAI one, with its data, in `dir`.
fn openai_copy(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(examples().join("mcp_files.ag")).expect("the example");
    let scripted = "model main = scripted { script: \"scripts/mcp_files.json\" }";
    assert!(text.contains(scripted), "the example's model line changed");
    let text = text.replace(
        scripted,
        "model main = openai { model: \"gpt-test\", max_tokens: 1024 }",
    );
    std::fs::create_dir_all(dir.join("data")).expect("data folder");
    std::fs::copy(examples().join("data/stock.md"), dir.join("data/stock.md")).expect("copy");
    let graph = dir.join("mcp_files.ag");
    std::fs::write(&graph, text).expect("write the copy");
    graph
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_works_over_the_openai_wire_format() {
    let Some(bin) = require_mcp_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let graph = openai_copy(dir.path());
    let (server, replay) =
        Replay::start(Wire::OpenAi, &examples().join("scripts/mcp_files.json")).await;
    let base = format!("{}/v1", server.uri());
    let out = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || {
            run(
                &dir,
                &bin,
                &graph,
                &[
                    ("OPENAI_API_KEY", "sk-test"),
                    ("OPENAI_BASE_URL", &base),
                    ("OPENAI_MODEL", "gpt-test"),
                ],
            )
        }
    })
    .await
    .expect("the run finished");
    let v = final_json(&out);
    assert!(
        v["answer"].as_str().is_some_and(|a| a.contains("46 units")),
        "{v}"
    );
    assert!(replay.violations().is_empty(), "{:?}", replay.violations());
    assert!(
        replay.unused().is_empty(),
        "unused responses: {:?}",
        replay.unused()
    );
    let requests = replay.requests();
    assert_eq!(requests.len(), 4);
    // The model was offered the calculator and exactly the three tools `only` keeps, each with
    // an object schema the API accepts.
    let mut offered = offered_tools(Wire::OpenAi, &requests[0].body);
    offered.sort();
    assert_eq!(
        offered,
        [
            "calculator",
            "list_directory",
            "read_text_file",
            "search_files"
        ]
    );
    for t in requests[0].body["tools"].as_array().into_iter().flatten() {
        let params = &t["function"]["parameters"];
        assert_eq!(params["type"], "object", "{t}");
        assert!(params["properties"].is_object(), "{t}");
    }
    // The file's text reached the model as the tool result of the second call.
    let on_disk = std::fs::read_to_string(examples().join("data/stock.md")).expect("stock.md");
    let third: &Value = &requests[2].body;
    let tool_texts: Vec<&str> = third["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        tool_texts.iter().any(|t| t.contains(on_disk.trim())),
        "{tool_texts:?}"
    );
}

#[test]
fn a_server_that_cannot_start_fails_the_node_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let graph = examples().join("mcp_files.ag");
    let missing = dir.path().join("no-such-server");
    let mut cmd_env = vec![];
    let missing_s = missing.display().to_string();
    cmd_env.push(("MCP_FILESYSTEM_SERVER", &missing_s));
    let input = json!({ "question": QUESTION }).to_string();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentgraph"));
    cmd.current_dir(dir.path())
        .arg("--db")
        .arg(dir.path().join("db"))
        .args(["run", &graph.display().to_string(), "--input", &input])
        .env("NO_COLOR", "1");
    for v in PROVIDER_VARS {
        cmd.env_remove(v);
    }
    for (k, v) in cmd_env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("the agentgraph binary runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("could not be started"), "{stderr}");
    assert!(stderr.contains(&missing_s), "{stderr}");
}

/// Every tool server-everything offers, sanitised, offered in one request over each wire
/// format: the mock provider holds each request to what the real APIs refuse (names, object
/// schemas, arrays with one `items` schema, no `$ref`, no top-level unions).
#[tokio::test(flavor = "multi_thread")]
async fn every_tool_of_server_everything_passes_both_providers_request_rules() {
    let Some(bin) = require_mcp_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("answer.json");
    std::fs::write(
        &script,
        json!({"responses": [{"node": "agent", "text": "nothing to do"}]}).to_string(),
    )
    .unwrap();
    for (wire, model, vars) in [
        (
            Wire::OpenAi,
            "openai { model: \"gpt-test\" }",
            ["OPENAI_API_KEY", "OPENAI_BASE_URL"],
        ),
        (
            Wire::Anthropic,
            "anthropic { model: \"claude-test\" }",
            ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"],
        ),
    ] {
        let graph = dir.path().join(format!("{wire:?}.ag"));
        std::fs::write(
            &graph,
            format!(
                "graph all_tools {{\n  state {{ messages: messages }}\n  input {{ messages }}\n  \
                 model main = {model}\n  \
                 tools everything = mcp {{ command: \"{}\", args: [\"stdio\"] }}\n  \
                 node agent: llm {{ model: main, messages: messages, tools: everything }}\n  \
                 START -> agent -> END\n}}\n",
                bin.join("mcp-server-everything").display()
            ),
        )
        .unwrap();
        let (server, replay) = Replay::start(wire, &script).await;
        let base = match wire {
            Wire::OpenAi => format!("{}/v1", server.uri()),
            Wire::Anthropic => server.uri(),
        };
        let (d, g, b) = (dir.path().to_path_buf(), graph.clone(), bin.clone());
        let out = tokio::task::spawn_blocking(move || {
            let input = json!({"messages": [{"type": "human", "content": "hi"}]}).to_string();
            let o = Command::new(env!("CARGO_BIN_EXE_agentgraph"))
                .current_dir(&d)
                .arg("--db")
                .arg(d.join(format!("db-{wire:?}")))
                .args(["run", &g.display().to_string(), "--input", &input, "--json"])
                .env("NO_COLOR", "1")
                .env_remove("AGENTGRAPH_PROVIDER")
                .env(vars[0], "test-key")
                .env(vars[1], &base)
                .env(
                    "PATH",
                    format!(
                        "{}:{}",
                        b.display(),
                        std::env::var("PATH").unwrap_or_default()
                    ),
                )
                .output()
                .expect("the agentgraph binary runs");
            Out {
                code: o.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            }
        })
        .await
        .expect("the run finished");
        final_json(&out);
        assert!(
            replay.violations().is_empty(),
            "{wire:?}: {:?}",
            replay.violations()
        );
        let requests = replay.requests();
        assert_eq!(requests.len(), 1, "{wire:?}");
        let offered = offered_tools(wire, &requests[0].body);
        for expected in [
            "echo",
            "get-sum",
            "get-tiny-image",
            "trigger-long-running-operation",
        ] {
            assert!(
                offered.iter().any(|n| n == expected),
                "{wire:?}: {offered:?}"
            );
        }
    }
}
