//! Tool sets: `tools kit = [calculator, fs]` (registered tools, and other sets whose tools it
//! includes) and `tools fs = mcp { … }` (an MCP server's tools, listed when a node first needs
//! them).
//!
//! ```text
//! tools fs = mcp { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "."],
//!                  env: { LOG: "quiet" }, only: ["read_text_file", "list_directory"] }
//! tools remote = mcp { url: "http://127.0.0.1:3001/mcp",
//!                      headers: { Authorization: env("MCP_TOKEN") }, except: ["add"],
//!                      timeout: 30s }
//! tools kit = [calculator, fs]
//! ```
//!
//! A stdio server starts in the graph file's folder unless `cwd` says otherwise. Values are
//! expressions evaluated when the graph is compiled (`env("…")` reads the environment then).

use super::ToolMap;
use crate::ast::{Expr, ExprKind, GraphDecl, GraphItem, ObjectLit, Span, ToolsDecl};
use crate::registry::node_build::constant;
use agentgraph_agents::tools::{ListedTools, Tool, ToolSource};
use agentgraph_mcp::{McpSource, Pool, ServerConfig, Transport};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The source kinds a set may be declared with.
pub const SOURCE_KINDS: &[&str] = &["mcp"];

/// The keys of an `mcp { … }` block.
pub const MCP_KEYS: &[&str] = &[
    "command", "args", "env", "cwd", "url", "headers", "only", "except", "timeout",
];

/// A problem with a tool set seen without running anything: where, what, and the hint.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Where.
    pub span: Span,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub help: String,
}

fn problem(span: Span, message: impl Into<String>, help: impl Into<String>) -> Problem {
    Problem {
        span,
        message: message.into(),
        help: help.into(),
    }
}

/// What `check` can tell about an `mcp { … }` block: unknown keys, a missing or double
/// `command`/`url`, keys of the other transport, and literal values of the wrong shape.
pub fn mcp_problems(o: &ObjectLit) -> Vec<Problem> {
    let mut out = Vec::new();
    for (k, _) in &o.entries {
        if !MCP_KEYS.contains(&k.name.as_str()) {
            out.push(problem(
                k.span,
                format!("`{}` is not an option of an `mcp` block", k.name),
                crate::diagnostic::suggestion("options", &k.name, MCP_KEYS.iter().copied()),
            ));
        }
    }
    match (o.get("command"), o.get("url")) {
        (None, None) => out.push(problem(
            o.span,
            "an `mcp` block needs `command` (a server started as a child process) or `url` \
             (a streamable HTTP endpoint)",
            "e.g. `mcp { command: \"npx\", args: [\"-y\", \"@modelcontextprotocol/server-everything\"] }` \
             or `mcp { url: \"http://127.0.0.1:3001/mcp\" }`",
        )),
        (Some(_), Some(u)) => out.push(problem(
            u.span,
            "an `mcp` block has `command` or `url`, not both",
            "declare two tool sets, one per server",
        )),
        (Some(_), None) => {
            for key in ["headers"] {
                if let Some(e) = o.get(key) {
                    out.push(problem(
                        e.span,
                        format!("`{key}` is for a server reached by `url`"),
                        "a child process gets variables through `env`",
                    ));
                }
            }
        }
        (None, Some(_)) => {
            for key in ["args", "env", "cwd"] {
                if let Some(e) = o.get(key) {
                    out.push(problem(
                        e.span,
                        format!("`{key}` is for a server started by `command`"),
                        "an HTTP server gets credentials through `headers`",
                    ));
                }
            }
        }
    }
    for (k, v) in &o.entries {
        let shape = match k.name.as_str() {
            "command" | "url" | "cwd" => (!maybe_string(v)).then_some("a string"),
            "args" | "only" | "except" => match &v.kind {
                ExprKind::List { items } => items
                    .iter()
                    .any(|i| !maybe_string(i))
                    .then_some("a list of strings"),
                k if is_literal(k) => Some("a list of strings"),
                _ => None,
            },
            "env" | "headers" => match &v.kind {
                ExprKind::Object { object } => object
                    .entries
                    .iter()
                    .any(|(_, e)| !maybe_string(e))
                    .then_some("an object of strings"),
                k if is_literal(k) => Some("an object of strings"),
                _ => None,
            },
            "timeout" => (is_literal(&v.kind) && !matches!(v.kind, ExprKind::Duration { .. }))
                .then_some("a duration (`30s`)"),
            _ => None,
        };
        if let Some(want) = shape {
            out.push(problem(
                v.span,
                format!("`{}` is {want}", k.name),
                format!("write `{}` as {want}", k.name),
            ));
        }
    }
    out
}

/// Whether the expression is a literal (whose shape is known without evaluating it).
fn is_literal(k: &ExprKind) -> bool {
    matches!(
        k,
        ExprKind::Null
            | ExprKind::Bool { .. }
            | ExprKind::Int { .. }
            | ExprKind::Float { .. }
            | ExprKind::Duration { .. }
            | ExprKind::Str { .. }
            | ExprKind::List { .. }
            | ExprKind::Object { .. }
    )
}

/// Whether the expression may give a string (a string literal, or anything not a literal).
fn maybe_string(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Str { .. }) || !is_literal(&e.kind)
}

/// The server an `mcp { … }` block declares, its values evaluated now; relative `cwd` and the
/// default working directory are the graph file's folder (`base_dir`).
pub fn mcp_config(o: &ObjectLit, base_dir: &Path) -> Result<ServerConfig, String> {
    let value = |key: &str| -> Result<Option<Value>, String> {
        o.get(key)
            .map(|e| constant(e).map_err(|err| format!("mcp `{key}`: {err}")))
            .transpose()
    };
    let string = |key: &str| -> Result<Option<String>, String> {
        match value(key)? {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(Value::Null) => Err(format!(
                "mcp `{key}` is null (an `env(…)` variable that is not set?)"
            )),
            Some(other) => Err(format!("mcp `{key}` is a string, got {other}")),
        }
    };
    let strings = |key: &str| -> Result<Vec<String>, String> {
        match value(key)? {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s),
                    other => Err(format!("mcp `{key}` holds strings, got {other}")),
                })
                .collect(),
            Some(other) => Err(format!("mcp `{key}` is a list of strings, got {other}")),
        }
    };
    let map = |key: &str| -> Result<BTreeMap<String, String>, String> {
        match value(key)? {
            None => Ok(BTreeMap::new()),
            Some(Value::Object(entries)) => entries
                .into_iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k, s)),
                    Value::Null => Err(format!(
                        "mcp `{key}.{k}` is null (an `env(…)` variable that is not set?)"
                    )),
                    other => Err(format!("mcp `{key}.{k}` is a string, got {other}")),
                })
                .collect(),
            Some(other) => Err(format!("mcp `{key}` is an object of strings, got {other}")),
        }
    };
    let transport = match (string("command")?, string("url")?) {
        (Some(command), None) if !command.trim().is_empty() => {
            // The graph's folder, when there is one on disk (a graph compiled from text in
            // memory has none: the server then starts where the process runs).
            let cwd = match string("cwd")? {
                Some(dir) => Some(base_dir.join(dir)),
                None => base_dir.is_dir().then(|| base_dir.to_path_buf()),
            };
            Transport::Stdio {
                command,
                args: strings("args")?,
                env: map("env")?,
                cwd: cwd.map(|d| d.display().to_string()),
            }
        }
        (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
            Transport::Http {
                url,
                headers: map("headers")?,
            }
        }
        (None, Some(url)) => return Err(format!("mcp `url` is an http(s) URL, got `{url}`")),
        _ => return Err("an `mcp` block needs a non-empty `command` or a `url`, not both".into()),
    };
    let mut config = ServerConfig::new(transport)
        .only(strings("only")?)
        .except(strings("except")?);
    if let Some(v) = value("timeout")? {
        let ms = v
            .as_u64()
            .filter(|ms| *ms > 0)
            .ok_or_else(|| format!("mcp `timeout` is a duration such as `30s`, got {v}"))?;
        config = config.call_timeout(Duration::from_millis(ms));
    }
    Ok(config)
}

/// The tools of set `name`: the registered tools it names (directly or through the sets it
/// includes) and the sources listed at first use.
pub fn resolve(
    graph: &GraphDecl,
    name: &str,
    tools: &ToolMap,
    base_dir: &Path,
) -> Result<(Vec<Arc<dyn Tool>>, ListedTools), String> {
    let mut fixed: Vec<Arc<dyn Tool>> = Vec::new();
    let mut sources: Vec<Arc<dyn ToolSource>> = Vec::new();
    let registered: Arc<BTreeSet<String>> = Arc::new(tools.keys().cloned().collect());
    let mut seen = BTreeSet::new();
    collect(
        graph,
        name,
        tools,
        base_dir,
        &registered,
        &mut seen,
        &mut fixed,
        &mut sources,
    )?;
    let names: Vec<String> = fixed.iter().map(|t| t.name().to_string()).collect();
    Ok((fixed, ListedTools::new(sources, names)))
}

#[allow(clippy::too_many_arguments)]
fn collect(
    graph: &GraphDecl,
    name: &str,
    tools: &ToolMap,
    base_dir: &Path,
    registered: &Arc<BTreeSet<String>>,
    seen: &mut BTreeSet<String>,
    fixed: &mut Vec<Arc<dyn Tool>>,
    sources: &mut Vec<Arc<dyn ToolSource>>,
) -> Result<(), String> {
    if !seen.insert(name.to_string()) {
        return Ok(());
    }
    let decl = tool_set(graph, name).ok_or_else(|| format!("tool set `{name}` is not declared"))?;
    if let Some(source) = &decl.source {
        let config =
            mcp_config(&source.options, base_dir).map_err(|e| format!("tool set `{name}`: {e}"))?;
        sources.push(Arc::new(McpSource::new(
            Pool::global(),
            config,
            registered.clone(),
        )));
        return Ok(());
    }
    for t in &decl.tools {
        match tools.get(&t.name.name) {
            Some(tool) => {
                if !fixed.iter().any(|f| f.name() == tool.name()) {
                    fixed.push(tool.clone());
                }
            }
            None if tool_set(graph, &t.name.name).is_some() => collect(
                graph,
                &t.name.name,
                tools,
                base_dir,
                registered,
                seen,
                fixed,
                sources,
            )?,
            None => return Err(format!("tool `{}` is not registered", t.name.name)),
        }
    }
    Ok(())
}

/// The tools of every MCP set of the graph, listed at first use (for `tool` nodes, which name
/// a tool rather than a set). Registered names are refused to them as in a node's set.
pub fn graph_sources(
    graph: &GraphDecl,
    tools: &ToolMap,
    base_dir: &Path,
) -> Result<ListedTools, String> {
    let registered: Arc<BTreeSet<String>> = Arc::new(tools.keys().cloned().collect());
    let mut sources: Vec<Arc<dyn ToolSource>> = Vec::new();
    for item in &graph.items {
        if let GraphItem::Tools(ToolsDecl {
            name,
            source: Some(source),
            ..
        }) = item
        {
            let config = mcp_config(&source.options, base_dir)
                .map_err(|e| format!("tool set `{}`: {e}", name.name))?;
            sources.push(Arc::new(McpSource::new(
                Pool::global(),
                config,
                registered.clone(),
            )));
        }
    }
    Ok(ListedTools::new(sources, Vec::<String>::new()))
}

/// The declaration of tool set `name`.
pub fn tool_set<'a>(graph: &'a GraphDecl, name: &str) -> Option<&'a ToolsDecl> {
    graph.items.iter().find_map(|i| match i {
        GraphItem::Tools(t) if t.name.name == name => Some(t),
        _ => None,
    })
}

/// The sets a list set includes, in order (for the checker's cycle test).
pub fn included(decl: &ToolsDecl, is_set: impl Fn(&str) -> bool) -> Vec<&str> {
    decl.tools
        .iter()
        .map(|t| t.name.name.as_str())
        .filter(|n| is_set(n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(src: &str) -> GraphDecl {
        let parsed = crate::parse::parse(src);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let file = parsed.file.expect("a file");
        file.graphs.into_iter().next().expect("a graph")
    }

    fn config(block: &str) -> Result<ServerConfig, String> {
        let g = graph(&format!("graph g {{\n  tools s = mcp {block}\n}}\n"));
        let decl = tool_set(&g, "s").expect("set s");
        let source = decl.source.as_ref().expect("a source");
        mcp_config(&source.options, Path::new("/"))
    }

    #[test]
    fn a_stdio_block_becomes_a_config_run_in_the_graph_folder() {
        let c = config(
            r#"{ command: "npx", args: ["-y", "srv"], env: { A: "1" }, only: ["x"], timeout: 5s }"#,
        )
        .expect("valid");
        assert_eq!(
            c.transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "srv".into()],
                env: [("A".to_string(), "1".to_string())].into_iter().collect(),
                cwd: Some("/".into()),
            }
        );
        assert_eq!(c.only, ["x"]);
        assert_eq!(c.call_timeout, Duration::from_secs(5));
        let c = config(r#"{ command: "srv", cwd: "tools" }"#).expect("valid");
        assert!(matches!(c.transport, Transport::Stdio { cwd: Some(d), .. } if d == "/tools"));
    }

    #[test]
    fn an_http_block_reads_headers_from_the_environment() {
        let c = config(
            r#"{ url: "http://127.0.0.1:9/mcp", headers: { Authorization: env("AGENTGRAPH_TEST_UNSET_VAR_1", "Bearer t") }, except: ["a"] }"#,
        )
        .expect("valid");
        assert_eq!(
            c.transport,
            Transport::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer t".to_string())]
                    .into_iter()
                    .collect(),
            }
        );
        assert_eq!(c.except, ["a"]);
    }

    #[test]
    fn blocks_that_cannot_work_say_why() {
        let e = config(r#"{ url: "http://x/mcp", headers: { Authorization: env("AGENTGRAPH_TEST_UNSET_VAR_2") } }"#)
            .expect_err("unset variable");
        assert!(
            e.contains("headers.Authorization") && e.contains("null"),
            "{e}"
        );
        let e = config(r#"{ url: "ftp://x" }"#).expect_err("not http");
        assert!(e.contains("http(s)"), "{e}");
        let e = config(r#"{ command: "" }"#).expect_err("empty");
        assert!(e.contains("non-empty"), "{e}");
        let e = config(r#"{ command: "x", args: [1] }"#).expect_err("not strings");
        assert!(e.contains("`args` holds strings"), "{e}");
    }

    #[test]
    fn sets_include_sets_once_and_keep_sources_for_later() {
        let g = graph(
            "graph g {\n  tools fs = mcp { command: \"srv\" }\n  tools a = [fs]\n  tools b = [a, fs]\n}\n",
        );
        let (fixed, listed) = resolve(&g, "b", &ToolMap::new(), Path::new("/")).expect("resolves");
        assert!(fixed.is_empty());
        assert!(!listed.is_empty());
        assert_eq!(
            format!("{listed:?}").matches("MCP server").count(),
            1,
            "{listed:?}"
        );
        let e = resolve(&g, "nope", &ToolMap::new(), Path::new("/")).err();
        assert_eq!(e.as_deref(), Some("tool set `nope` is not declared"));
    }
}
