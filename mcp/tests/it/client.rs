//! The MCP client against the real reference servers from npm (`scripts/mcp-servers install`):
//! server-everything over stdio and streamable HTTP, server-filesystem over stdio.

use agentgraph_agents::tools::{Tool, ToolContext};
use agentgraph_mcp::{toolset, McpError, Pool, ServerConfig};
use agentgraph_runtime::StateView;
use agentgraph_test_support::mcp::{everything_http, free_port};
use agentgraph_test_support::require_mcp_servers;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn everything(bin: &Path) -> ServerConfig {
    ServerConfig::stdio(
        bin.join("mcp-server-everything").display().to_string(),
        ["stdio"],
    )
}

fn none_taken(_: &str) -> Option<String> {
    None
}

fn ctx() -> ToolContext {
    ToolContext::detached(StateView::from_object(json!({})))
}

async fn tools_of(pool: &Arc<Pool>, config: &ServerConfig) -> Vec<Arc<dyn Tool>> {
    match toolset(pool, config, &none_taken).await {
        Ok(t) => t,
        Err(e) => panic!("toolset: {e}"),
    }
}

fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.name() == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// Every schema node that is an array has one `items` schema; no `$ref` is left; the top level
/// is an object with properties (what the Anthropic and OpenAI tool APIs require).
fn assert_provider_safe(name: &str, schema: &Value, top: bool) {
    let o = schema
        .as_object()
        .unwrap_or_else(|| panic!("{name}: schema is not an object: {schema}"));
    if top {
        assert_eq!(o.get("type"), Some(&json!("object")), "{name}: {schema}");
        assert!(
            o.get("properties").is_some_and(Value::is_object),
            "{name}: {schema}"
        );
        for k in ["anyOf", "oneOf", "allOf", "not"] {
            assert!(!o.contains_key(k), "{name}: top-level {k}: {schema}");
        }
    }
    assert!(
        !o.contains_key("$ref") && !o.contains_key("$defs"),
        "{name}: {schema}"
    );
    if o.get("type") == Some(&json!("array")) {
        assert!(
            o.get("items").is_some_and(Value::is_object),
            "{name}: array without one items schema: {schema}"
        );
    }
    for (k, v) in o {
        match (k.as_str(), v) {
            ("properties", Value::Object(props)) => {
                for (p, s) in props {
                    assert_provider_safe(&format!("{name}.{p}"), s, false);
                }
            }
            ("items" | "additionalProperties", Value::Object(_)) => {
                assert_provider_safe(&format!("{name}[]"), v, false)
            }
            ("anyOf" | "oneOf" | "allOf", Value::Array(alts)) => {
                for a in alts {
                    assert_provider_safe(&format!("{name}|"), a, false);
                }
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn stdio_server_lists_sanitised_tools_and_calls_them() {
    let Some(bin) = require_mcp_servers() else {
        return;
    };
    let pool = Pool::new();
    let tools = tools_of(&pool, &everything(&bin)).await;
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-env",
        "get-tiny-image",
        "trigger-long-running-operation",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    for t in &tools {
        assert_provider_safe(t.name(), &t.input_schema(), true);
        assert!(!t.description().is_empty(), "{}", t.name());
    }
    let out = find(&tools, "get-sum")
        .call(json!({"a": 2, "b": 3}), &ctx())
        .await
        .expect("get-sum");
    assert!(
        out.content.as_str().is_some_and(|t| t.contains('5')),
        "{:?}",
        out.content
    );
    let out = find(&tools, "echo")
        .call(json!({"message": "hello from agentgraph"}), &ctx())
        .await
        .expect("echo");
    assert!(out
        .content
        .as_str()
        .is_some_and(|t| t.contains("hello from agentgraph")));
    // An image is summarised, not pasted.
    let out = find(&tools, "get-tiny-image")
        .call(json!({}), &ctx())
        .await
        .expect("image");
    let text = out.content.as_str().unwrap_or_default().to_string();
    assert!(text.contains("[image: image/png"), "{text}");
    assert!(text.len() < 2_000, "{text}");
    // A bad argument comes back as an error the model can read.
    let e = find(&tools, "get-sum")
        .call(json!({"a": "two", "b": 3}), &ctx())
        .await
        .expect_err("invalid");
    assert!(e.code.starts_with("MCP_"), "{e:?}");
    assert!(
        e.message.to_lowercase().contains("number") || e.message.contains("a"),
        "{e:?}"
    );
    pool.shutdown().await;
}

#[tokio::test]
async fn env_reaches_the_process_and_filters_pick_tools() {
    let Some(bin) = require_mcp_servers() else {
        return;
    };
    let pool = Pool::new();
    let config = everything(&bin)
        .with("AGENTGRAPH_MCP_PROBE", "probe-value-17")
        .only(["get-env", "get-sum", "echo"])
        .except(["echo"]);
    let tools = tools_of(&pool, &config).await;
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort_unstable();
    assert_eq!(names, ["get-env", "get-sum"]);
    let out = find(&tools, "get-env")
        .call(json!({}), &ctx())
        .await
        .expect("env");
    assert!(out
        .content
        .as_str()
        .is_some_and(|t| t.contains("probe-value-17")));
    // `only` naming a tool the server lacks.
    let e = toolset(&pool, &everything(&bin).only(["get-summ"]), &none_taken)
        .await
        .err()
        .expect("unknown");
    assert!(
        matches!(e, McpError::UnknownTool { ref name, .. } if name == "get-summ"),
        "{e}"
    );
    assert!(e.to_string().contains("get-sum"), "{e}");
    // A tool name already registered is refused, naming the way out.
    let taken = |n: &str| (n == "echo").then(|| "a registered tool".to_string());
    let e = toolset(&pool, &everything(&bin), &taken)
        .await
        .err()
        .expect("shadowed");
    assert!(e.to_string().contains("except: [\"echo\"]"), "{e}");
    pool.shutdown().await;
}

#[tokio::test]
async fn a_call_past_its_limit_times_out_and_a_cancel_stops_it() {
    let Some(bin) = require_mcp_servers() else {
        return;
    };
    let pool = Pool::new();
    let config = everything(&bin).call_timeout(Duration::from_millis(800));
    let tools = tools_of(&pool, &config).await;
    let long = find(&tools, "trigger-long-running-operation");
    let e = long
        .call(json!({"duration": 5, "steps": 5}), &ctx())
        .await
        .expect_err("timeout");
    assert_eq!(e.code, "MCP_TIMEOUT", "{e:?}");
    // The run's cancellation reaches the call in flight.
    let transport = config.transport.clone();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = std::time::Instant::now();
    let e = pool
        .call(
            &transport,
            "trigger-long-running-operation",
            json!({"duration": 5, "steps": 5}),
            Duration::from_secs(30),
            &cancel,
        )
        .await
        .expect_err("cancelled");
    assert_eq!(e, McpError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(4));
    // The connection is still usable.
    let out = find(&tools, "get-sum")
        .call(json!({"a": 1, "b": 1}), &ctx())
        .await
        .expect("after");
    assert!(out.content.as_str().is_some_and(|t| t.contains('2')));
    pool.shutdown().await;
}

/// The server is started through `sh`, which writes its process id to a file first, so the
/// test can kill it in the middle of a call.
#[tokio::test]
async fn a_server_killed_mid_call_is_an_error_then_restarted() {
    let Some(bin) = require_mcp_servers() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pid");
    let script = format!(
        "echo $$ > '{}'; exec '{}' stdio",
        pidfile.display(),
        bin.join("mcp-server-everything").display()
    );
    let config = ServerConfig::stdio("sh", ["-c".to_string(), script]);
    let pool = Pool::new();
    let tools = tools_of(&pool, &config).await;
    let first_pid = std::fs::read_to_string(&pidfile)
        .expect("pid")
        .trim()
        .to_string();
    let long = find(&tools, "trigger-long-running-operation");
    let call = tokio::spawn({
        let long = long.clone();
        async move {
            long.call(json!({"duration": 10, "steps": 10}), &ctx())
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = std::process::Command::new("kill")
        .args(["-9", &first_pid])
        .status()
        .expect("kill");
    assert!(status.success());
    let e = call.await.expect("join").expect_err("killed");
    assert_eq!(e.code, "MCP_CLOSED", "{e:?}");
    assert!(e.message.contains("restarted on the next call"), "{e:?}");
    // The next call starts the server again.
    let out = find(&tools, "get-sum")
        .call(json!({"a": 20, "b": 22}), &ctx())
        .await
        .expect("restarted");
    assert!(out.content.as_str().is_some_and(|t| t.contains("42")));
    let second_pid = std::fs::read_to_string(&pidfile)
        .expect("pid")
        .trim()
        .to_string();
    assert_ne!(first_pid, second_pid);
    pool.shutdown().await;
}

#[tokio::test]
async fn streamable_http_server_lists_and_calls() {
    let Some(bin) = require_mcp_servers() else {
        return;
    };
    let server = everything_http(&bin);
    let pool = Pool::new();
    let config = ServerConfig::http(server.url.clone()).with("X-Agentgraph-Test", "1");
    let tools = tools_of(&pool, &config).await;
    assert!(tools.iter().any(|t| t.name() == "echo"));
    let out = find(&tools, "get-sum")
        .call(json!({"a": 40, "b": 2}), &ctx())
        .await
        .expect("sum");
    assert!(out.content.as_str().is_some_and(|t| t.contains("42")));
    // A server that is not there: a clear error naming the URL.
    let gone = ServerConfig::http(format!("http://127.0.0.1:{}/mcp", free_port()));
    let e = toolset(&pool, &gone, &none_taken)
        .await
        .err()
        .expect("unreachable");
    assert_eq!(e.code(), "MCP_CONNECT", "{e}");
    assert!(e.to_string().contains("127.0.0.1"), "{e}");
    pool.shutdown().await;
}

#[tokio::test]
async fn filesystem_server_reads_a_folder() {
    let Some(bin) = require_mcp_servers() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("notes.txt"), "agentgraph was here\n").expect("write");
    let root: PathBuf = dir.path().canonicalize().expect("canonical");
    let config = ServerConfig::stdio(
        bin.join("mcp-server-filesystem").display().to_string(),
        [root.display().to_string()],
    );
    let pool = Pool::new();
    let tools = tools_of(&pool, &config).await;
    for t in &tools {
        assert_provider_safe(t.name(), &t.input_schema(), true);
    }
    let listing = find(&tools, "list_directory")
        .call(json!({"path": root.display().to_string()}), &ctx())
        .await
        .expect("list");
    assert!(
        listing.content.to_string().contains("notes.txt"),
        "{:?}",
        listing.content
    );
    let read = find(&tools, "read_text_file")
        .call(
            json!({"path": root.join("notes.txt").display().to_string()}),
            &ctx(),
        )
        .await
        .expect("read");
    assert!(read.content.to_string().contains("agentgraph was here"));
    // Outside the allowed folder: the server's own refusal, as a tool error.
    let e = find(&tools, "read_text_file")
        .call(json!({"path": "/etc/hostname"}), &ctx())
        .await
        .expect_err("outside");
    assert_eq!(e.code, "MCP_TOOL_ERROR", "{e:?}");
    assert!(
        e.message.to_lowercase().contains("denied") || e.message.contains("outside"),
        "{e:?}"
    );
    pool.shutdown().await;
}
