//! `js` nodes: JavaScript function bodies over the state and a task's payload, in a sandbox
//! with time and memory limits; errors point at lines of the graph file.

use agentgraph_dsl::diagnostic::codes;
use agentgraph_dsl::{Diagnostic, Project, Registry};
use agentgraph_runtime::{CompiledGraph, Input, RunConfig, RunError, RunErrorKind};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub(crate) fn project(name: &str, text: &str) -> Project {
    let root = PathBuf::from(format!("/virtual/{name}"));
    let files = BTreeMap::from([(root.clone(), text.to_string())]);
    Project::from_files(&root, &files).expect("the snapshot has its root")
}

fn compile(text: &str) -> CompiledGraph {
    let p = project("graph.ag", text);
    match p.compile(&Registry::default()) {
        Ok(g) => g,
        Err(ds) => panic!("does not compile: {ds:#?}"),
    }
}

fn diagnostics(text: &str) -> Vec<Diagnostic> {
    project("graph.ag", text).check(&Registry::default())
}

/// The error of a run that fails, with its code and message.
async fn failure(g: &CompiledGraph, input: Value) -> (String, String) {
    match g.invoke(Input::values(input), RunConfig::default()).await {
        Err(RunError::NodeFailed { code, message, .. }) => (code.unwrap_or_default(), message),
        Err(other) => panic!("not a node failure: {other}"),
        Ok(out) => panic!("the run succeeded: {}", out.values),
    }
}

/// A graph with one `js` node, `run`, over `state` fields.
fn one_node(state: &str, node: &str) -> String {
    format!("graph g {{\n  state {{\n{state}\n  }}\n{node}\n  START -> run -> END\n}}\n")
}

/// The 1-based line of the first line of `text` that contains `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` is not in the text"))
        + 1
}

const MAP_REDUCE: &str = r#"graph map_reduce {
  state {
    items: list<json> = []
    results: list<json> = [] reduce append
    summary: json?
  }

  node split
  node measure: js {
    code: """
      // `item` is this task's payload; `items` is still the channel
      const word = item.word
      return { results: [{ word, length: word.length, upper: word.toUpperCase(), of: items.length }] }
    """
  }
  node collect: js {
    code: """
      const total = results.reduce((n, r) => n + r.length, 0)
      return { summary: { total, longest: results.reduce((a, r) => (r.length > a.length ? r : a)).word } }
    """
  }

  START -> split
  split -> send measure for item in items { item: item }
  measure -> collect -> END
}
"#;

#[tokio::test]
async fn a_send_fans_out_one_js_task_per_item_and_a_js_node_reduces() {
    let g = compile(MAP_REDUCE);
    let words = ["graph", "of", "agents", "js"];
    let items: Vec<Value> = words.iter().map(|w| json!({ "word": w })).collect();
    let out = g
        .invoke(
            Input::values(json!({ "items": items })),
            RunConfig::default(),
        )
        .await
        .unwrap();
    let expected: Vec<Value> = words
        .iter()
        .map(|w| json!({"word": w, "length": w.len(), "upper": w.to_uppercase(), "of": 4}))
        .collect();
    assert_eq!(out.values["results"], json!(expected));
    assert_eq!(
        out.values["summary"],
        json!({"total": 5 + 2 + 6 + 2, "longest": "agents"})
    );
    assert_eq!(out.stats.steps, 3, "split, the four measures, collect");
}

#[tokio::test]
async fn payload_keys_shadow_channels_and_state_is_the_snapshot() {
    let g = compile(
        r#"graph g {
  state {
    n: int = 100
    empty: string?
    seen: list<json> = [] reduce append
  }
  node split
  node look: js { code: "return { seen: [{ n, from_state: state.n, empty, keys: Object.keys(state).sort() }] }" }
  START -> split
  split -> send look for x in [1, 2] { n: x }
  look -> END
}
"#,
    );
    let out = g
        .invoke(Input::values(json!({})), RunConfig::default())
        .await
        .unwrap();
    let keys = json!(["empty", "n", "seen"]);
    assert_eq!(
        out.values["seen"],
        json!([
            {"n": 1, "from_state": 100, "empty": null, "keys": keys},
            {"n": 2, "from_state": 100, "empty": null, "keys": keys},
        ])
    );
}

#[tokio::test]
async fn no_return_or_null_is_no_update() {
    for code in ["const x = 1", "return null", "return undefined"] {
        let g = compile(&one_node(
            "    n: int = 7",
            &format!("  node run: js {{ code: \"{code}\" }}"),
        ));
        let out = g
            .invoke(Input::values(json!({})), RunConfig::default())
            .await
            .unwrap();
        assert_eq!(out.values, json!({"n": 7}), "{code}");
    }
}

#[tokio::test]
async fn returns_that_are_not_writes_fail_with_js_bad_return() {
    let cases = [
        ("return 3", "returned a number (3)"),
        ("return [1, 2]", "returned an array ([1,2])"),
        ("return 'x'", "returned a string"),
        ("return () => 1", "returned a function"),
        (
            "return { n: 1, nope: 2 }",
            "a key that is not a channel: `nope`",
        ),
        (
            "return { a: 1, b: 2 }",
            "keys that are not a channel: `a`, `b`",
        ),
    ];
    for (code, says) in cases {
        let g = compile(&one_node(
            "    n: int = 0",
            &format!("  node run: js {{ code: \"{code}\" }}"),
        ));
        let (c, message) = failure(&g, json!({})).await;
        assert_eq!(c, "JS_BAD_RETURN", "{code}: {message}");
        assert!(message.contains(says), "{code}: {message}");
        assert!(message.starts_with("js node \"run\": "), "{message}");
    }
}

#[tokio::test]
async fn an_endless_loop_stops_at_the_time_limit() {
    let g = compile(&one_node(
        "    n: int = 0",
        "  node run: js {\n    code: \"while (true) {}\"\n    time_limit: 300ms\n  }",
    ));
    let started = Instant::now();
    let (code, message) = failure(&g, json!({})).await;
    assert_eq!(code, "JS_TIMEOUT", "{message}");
    assert!(message.contains("300ms"), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // A try/catch cannot swallow the interrupt.
    let g = compile(&one_node(
        "    n: int = 0",
        "  node run: js {\n    code: \"try { while (true) {} } catch (e) { return { n: 1 } }\"\n    time_limit: 200ms\n  }",
    ));
    assert_eq!(failure(&g, json!({})).await.0, "JS_TIMEOUT");
}

#[tokio::test]
async fn a_huge_allocation_stops_at_the_memory_limit() {
    let grow = "const a = []; while (true) a.push(new Array(100000).fill(1))";
    for node in [
        // The default limit (64 MB).
        format!("  node run: js {{ code: \"{grow}\" }}"),
        format!("  node run: js {{\n    code: \"{grow}\"\n    memory_limit: 8000000\n  }}"),
        "  node run: js { code: \"return { n: new Array(1e9).fill(0).length }\" }".to_string(),
    ] {
        let g = compile(&one_node("    n: int = 0", &node));
        let started = Instant::now();
        let (code, message) = failure(&g, json!({})).await;
        assert_eq!(code, "JS_MEMORY", "{node}: {message}");
        assert!(message.contains("memory limit"), "{message}");
        assert!(started.elapsed() < Duration::from_secs(5), "{node}");
    }
}

#[tokio::test]
async fn deep_recursion_is_an_error_not_a_crash() {
    let g = compile(&one_node(
        "    n: int = 0",
        "  node run: js { code: \"const f = (x) => f(x + 1); return { n: f(0) }\" }",
    ));
    let (code, message) = failure(&g, json!({})).await;
    assert_eq!(code, "JS_ERROR");
    assert!(message.contains("RangeError"), "{message}");
}

#[tokio::test]
async fn a_thrown_error_names_its_line_in_the_graph_file() {
    let text = r#"graph g {
  state {
    n: int = 0
    items: list<int> = []
  }
  node run: js {
    code: """
      let total = 0
      for (const i of items) {
        if (i < 0) {
          throw new Error("negative item " + i)
        }
        total += i
      }
      return { n: total + missing.count }
    """
  }
  START -> run -> END
}
"#;
    let g = compile(text);
    let (code, message) = failure(&g, json!({"items": [1, -2]})).await;
    assert_eq!(code, "JS_ERROR");
    let line = line_of(text, "throw new Error");
    assert_eq!(
        message,
        format!("js node \"run\": Error: negative item -2 (graph.ag line {line})")
    );
    let (_, message) = failure(&g, json!({"items": [1, 2]})).await;
    let line = line_of(text, "missing.count");
    assert_eq!(
        message,
        format!("js node \"run\": ReferenceError: missing is not defined (graph.ag line {line})")
    );

    // Code on the line of its opening quotes.
    let text = "graph g {\n  state { n: int = 0 }\n  node run: js {\n    code: \"\"\"return {\n      n: nope() }\n    \"\"\"\n  }\n  START -> run -> END\n}\n";
    let (_, message) = failure(&compile(text), json!({})).await;
    assert!(
        message.ends_with(&format!("(graph.ag line {})", line_of(text, "nope()"))),
        "{message}"
    );
    // A one-line string's lines (`\n` escapes) are all on its line.
    let text = one_node(
        "    n: int = 0",
        "  node run: js {\n    code: \"const a = 1;\\n return { n: a.b.c }\"\n  }",
    );
    let (_, message) = failure(&compile(&text), json!({})).await;
    assert!(
        message.ends_with(&format!("(graph.ag line {})", line_of(&text, "code:"))),
        "{message}"
    );
}

#[tokio::test]
async fn a_thrown_value_that_is_not_an_error_names_where_the_code_starts() {
    let text = one_node(
        "    n: int = 0",
        "  node run: js {\n    code: \"throw { reason: 'no' }\"\n  }",
    );
    let (code, message) = failure(&compile(&text), json!({})).await;
    assert_eq!(code, "JS_ERROR");
    let line = line_of(&text, "throw");
    assert_eq!(
        message,
        format!("js node \"run\": threw {{\"reason\":\"no\"}} (graph.ag, code from line {line})")
    );
}

#[tokio::test]
async fn the_sandbox_has_no_file_system_network_or_environment() {
    let g = compile(&one_node(
        "    found: list<string> = []",
        "  node run: js { code: \"return { found: [typeof require, typeof process, typeof std, typeof os, typeof fetch, typeof XMLHttpRequest, typeof Deno, typeof Bun, typeof module, typeof exports] }\" }",
    ));
    let out = g
        .invoke(Input::values(json!({})), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.values["found"], json!(vec!["undefined"; 10]));

    for code in [
        "return { found: [require('fs').readFileSync('/etc/passwd', 'utf8')] }",
        "return { found: [process.env.HOME] }",
        "return { found: [std.getenv('HOME')] }",
        "return { found: [os.getcwd()] }",
        "return fetch('http://example.com')",
        "return import('fs')",
        "return import('os').then((m) => ({ found: [String(m)] }))",
    ] {
        let g = compile(&one_node(
            "    found: list<string> = []",
            &format!("  node run: js {{ code: \"{code}\" }}"),
        ));
        let (c, message) = failure(&g, json!({})).await;
        assert_eq!(c, "JS_ERROR", "{code}: {message}");
    }

    // A static import is not part of a function body: the check refuses it.
    let ds = diagnostics(&one_node(
        "    found: list<string> = []",
        "  node run: js { code: \"import fs from 'fs'\" }",
    ));
    assert!(ds.iter().any(|d| d.is(codes::JS_SYNTAX)), "{ds:#?}");
}

#[tokio::test]
async fn cancelling_the_run_stops_the_script() {
    let g = compile(&one_node(
        "    n: int = 0",
        "  node run: js {\n    code: \"while (true) {}\"\n    time_limit: 60s\n  }",
    ));
    let config = RunConfig::default();
    let token = config.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel();
    });
    let started = Instant::now();
    let err = g
        .invoke(Input::values(json!({})), config)
        .await
        .expect_err("cancelled");
    assert_eq!(err.kind(), RunErrorKind::Cancelled, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn the_node_timeout_gives_up_on_the_script() {
    let g = compile(&one_node(
        "    n: int = 0",
        "  node run: js {\n    code: \"while (true) {}\"\n    time_limit: 60s\n    timeout: 300ms\n  }",
    ));
    let started = Instant::now();
    let err = g
        .invoke(Input::values(json!({})), RunConfig::default())
        .await
        .expect_err("the node times out");
    assert!(err.to_string().contains("timeout"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn the_check_reports_javascript_syntax_errors_at_their_place_in_the_file() {
    let text = "graph g {\n  state { n: int = 0 }\n  node run: js {\n    code: \"\"\"\n      const a = 1\n      return { n: a + }\n    \"\"\"\n  }\n  START -> run -> END\n}\n";
    let ds = diagnostics(text);
    assert_eq!(ds.len(), 1, "{ds:#?}");
    let d = &ds[0];
    assert!(d.is(codes::JS_SYNTAX), "{d:#?}");
    assert!(d.message.contains("does not parse"), "{}", d.message);
    // QuickJS stops at the `}` after the `+`.
    let want = text.find("+ }").expect("the error is there") + 2;
    assert_eq!(d.span.start, want, "{}", &text[d.span.start..]);
    let p = project("graph.ag", text);
    let json = p.to_json(d);
    assert_eq!(json["span"]["line"], json!(line_of(text, "a + }")));
}

#[test]
fn the_check_wants_a_code_string_and_limits_of_the_right_kind() {
    let ds = diagnostics(&one_node(
        "    n: int = 0\n    src: string = \"\"",
        "  node run: js {\n    code: src\n    time_limit: 5\n    memory_limit: -1\n  }",
    ));
    let messages: Vec<&str> = ds.iter().map(|d| d.message.as_str()).collect();
    assert!(ds.iter().all(|d| d.is(codes::BAD_ENTRY)), "{ds:#?}");
    assert_eq!(
        messages,
        [
            "`code` is a string literal holding a JavaScript function body",
            "`time_limit` is a duration",
            "`memory_limit` is a positive number of bytes",
        ]
    );
    // Code with `{{` is JavaScript, not a template.
    let ds = diagnostics(&one_node(
        "    n: int = 0",
        "  node run: js { code: \"const o = {a: {b: 1}}; return { n: o.a.b }\" }",
    ));
    assert!(ds.is_empty(), "{ds:#?}");
    let ds = diagnostics(&one_node(
        "    n: int = 0",
        "  node run: js { code: \"const o = {{}}; return null\" }",
    ));
    assert!(ds.iter().all(|d| d.is(codes::JS_SYNTAX)), "{ds:#?}");
}
