//! `viz`: Mermaid and DOT diagrams of the example graphs.
//!
//! Golden files live in `dsl/tests/viz/` (`<example>.mmd`, `<example>.dot`); regenerate them with
//! `UPDATE_GOLDEN=1 cargo test -p agentgraph-dsl --test it viz::`. Structural checks compare the
//! diagrams with the compiled graphs. If Graphviz's `dot` is on the PATH, the DOT output is also
//! run through `dot -Tsvg`; without it that check is skipped (a failure under `CI=true`).

use agentgraph_dsl::viz::{render, Format};
use agentgraph_dsl::{Project, Registry};
use agentgraph_runtime::{CompiledGraph, END, START};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const FORMATS: [(Format, &str); 2] = [(Format::Mermaid, "mmd"), (Format::Dot, "dot")];

fn examples() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../graphs/examples");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ag"))
        .collect();
    out.sort();
    assert!(out.len() >= 6, "examples missing in {}", dir.display());
    out
}

/// The tools the examples name (the application registers the real ones; drawing needs names).
fn stub_tools() -> agentgraph_dsl::agents::ToolMap {
    use agentgraph_agents::tools::{Tool, ToolContext, ToolError, ToolOutput};
    struct Stub;
    #[async_trait::async_trait]
    impl Tool for Stub {
        fn name(&self) -> &str {
            "calculator"
        }
        fn description(&self) -> &str {
            "a stand-in"
        }
        fn input_schema(&self) -> serde_json::Value {
            serde_json::json!({"type": "object"})
        }
        async fn call(
            &self,
            _: serde_json::Value,
            _: &ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            Err(ToolError::new("STUB", "not for calling"))
        }
    }
    let stub: std::sync::Arc<dyn Tool> = std::sync::Arc::new(Stub);
    [("calculator".to_string(), stub)].into_iter().collect()
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

fn load(p: &Path) -> Project {
    Project::load(p).unwrap_or_else(|e| panic!("{e}"))
}

fn draw(p: &Path, f: Format) -> String {
    render(&load(p), f).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn golden_files_match() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/viz");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    for ex in examples() {
        for (format, ext) in FORMATS {
            let got = draw(&ex, format);
            let path = dir.join(format!("{}.{ext}", stem(&ex)));
            if update {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &got).unwrap();
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(want) if want == got => {}
                Ok(want) => {
                    let line = want.lines().zip(got.lines()).position(|(a, b)| a != b);
                    let line = line.unwrap_or(want.lines().count().min(got.lines().count()));
                    failures.push(format!(
                        "{} differs at line {}:\n  want: {:?}\n  got:  {:?}\n--- got ---\n{got}",
                        path.display(),
                        line + 1,
                        want.lines().nth(line).unwrap_or("<eof>"),
                        got.lines().nth(line).unwrap_or("<eof>"),
                    ));
                }
                Err(e) => failures.push(format!("{}: {e}", path.display())),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(regenerate with UPDATE_GOLDEN=1 cargo test -p agentgraph-dsl --test it viz::)",
        failures.join("\n")
    );
}

#[test]
fn output_is_deterministic() {
    for ex in examples() {
        for (format, _) in FORMATS {
            assert_eq!(draw(&ex, format), draw(&ex, format));
        }
    }
}

/// The DOT ids of a compiled graph's node, as an edge's tail and as its head.
fn dot_ends(g: &CompiledGraph, prefix: &str, name: &str) -> (String, String) {
    match name {
        START => (format!("{prefix}START"), String::new()),
        END => (String::new(), format!("{prefix}END")),
        n if g.subgraph(n).is_some() => {
            (format!("{prefix}{n}__END"), format!("{prefix}{n}__START"))
        }
        n => (format!("{prefix}{n}"), format!("{prefix}{n}")),
    }
}

/// Every node, static edge, route target and waiting edge of `g` (and its subgraphs) is drawn.
fn check_against_compiled(g: &CompiledGraph, prefix: &str, mermaid: &str, dot: &str, what: &str) {
    let dot_edges: Vec<&str> = dot
        .lines()
        .map(str::trim)
        .filter(|l| l.contains(" -> "))
        .collect();
    let has_edge = |from: &str, to: &str, style: Option<&str>| {
        dot_edges.iter().any(|l| {
            l.starts_with(&format!("\"{from}\" -> \"{to}\""))
                && style.is_none_or(|s| l.contains(&format!("style={s}")))
        })
    };
    for n in g.node_names() {
        let id = format!("{prefix}{n}");
        if let Some(child) = g.subgraph(n) {
            assert!(
                dot.contains(&format!("subgraph \"cluster_{id}\" {{")),
                "{what}: cluster {id}"
            );
            assert!(
                mermaid.contains(&format!("subgraph {id} [\"{n}<br/>subgraph ")),
                "{what}: {id}"
            );
            check_against_compiled(child, &format!("{id}__"), mermaid, dot, what);
        } else {
            assert!(
                dot.contains(&format!("\"{id}\" [label=\"{n}")),
                "{what}: DOT node {id}"
            );
            let line = mermaid.lines().map(str::trim).find(|l| l.starts_with(&id));
            let line = line.unwrap_or_else(|| panic!("{what}: Mermaid node {id}"));
            assert!(line[id.len()..]
                .trim_start_matches(['[', '(', '{'])
                .starts_with(&format!("\"{n}")));
        }
    }
    for (from, to) in g.edges() {
        let (tail, head) = (dot_ends(g, prefix, &from).0, dot_ends(g, prefix, &to).1);
        assert!(
            has_edge(&tail, &head, None),
            "{what}: edge {from} -> {to}\n{dot}"
        );
    }
    for (from, targets) in g.routes() {
        let tail = dot_ends(g, prefix, &from).0;
        for to in targets {
            let head = dot_ends(g, prefix, &to).1;
            let ok = has_edge(&tail, &head, Some("dashed")) || has_edge(&tail, &head, Some("bold"));
            assert!(ok, "{what}: route {from} -> {to}\n{dot}");
        }
    }
    for (sources, target) in g.joins() {
        let point = format!("{prefix}{target}__join");
        for s in sources {
            let tail = dot_ends(g, prefix, &s).0;
            assert!(
                has_edge(&tail, &point, Some("dotted")),
                "{what}: wait {s} -> {point}"
            );
        }
        assert!(
            has_edge(&point, &dot_ends(g, prefix, &target).1, None),
            "{what}: join {target}"
        );
    }
}

#[test]
fn diagrams_match_the_compiled_graphs() {
    for ex in examples() {
        let project = load(&ex);
        let mut reg = Registry::default();
        agentgraph_dsl::agents::register(&mut reg, stub_tools());
        let g = project.compile(&reg).unwrap_or_else(|diags| {
            let shown: Vec<String> = diags
                .iter()
                .map(|d| project.render(d, false, 100))
                .collect();
            panic!("{}: {}", ex.display(), shown.join("\n"))
        });
        let (mermaid, dot) = (draw(&ex, Format::Mermaid), draw(&ex, Format::Dot));
        assert!(mermaid.contains("flowchart TD\n"));
        assert!(dot.starts_with(&format!("digraph \"{}\" {{", g.name())));
        for id in ["START", "END"] {
            assert!(
                dot.contains(&format!("\"{id}\" [label=\"{id}\"")),
                "{}",
                ex.display()
            );
        }
        assert!(mermaid.contains("    START((\"START\")):::terminal\n"));
        assert!(mermaid.contains("    END(((\"END\"))):::terminal\n"));
        check_against_compiled(&g, "", &mermaid, &dot, &stem(&ex));
    }
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../graphs/examples")
        .join(name)
}

#[test]
fn routes_are_labelled_with_their_conditions() {
    let (m, d) = (
        draw(&example("approval.ag"), Format::Mermaid),
        draw(&example("approval.ag"), Format::Dot),
    );
    assert!(
        m.contains("review -.->|\"decision == #quot;yes#quot;\"| publish"),
        "{m}"
    );
    assert!(m.contains("review -.->|\"else\"| END"), "{m}");
    assert!(
        d.contains("\"review\" -> \"publish\" [label=\"decision == \\\"yes\\\"\", style=dashed];"),
        "{d}"
    );
    assert!(
        d.contains("\"review\" -> \"END\" [label=\"else\", style=dashed];"),
        "{d}"
    );
    // An interrupt node is a hexagon with the interrupt class.
    assert!(
        m.contains("review{{\"review<br/>(interrupt)\"}}:::interrupt"),
        "{m}"
    );
    assert!(
        d.contains("\"review\" [label=\"review\\n(interrupt)\", shape=hexagon"),
        "{d}"
    );

    let (m, d) = (
        draw(&example("counter.ag"), Format::Mermaid),
        draw(&example("counter.ag"), Format::Dot),
    );
    assert!(m.contains("bump -.->|\"count #lt; limit\"| bump"), "{m}");
    assert!(
        d.contains("\"bump\" -> \"bump\" [label=\"count < limit\", style=dashed];"),
        "{d}"
    );
}

#[test]
fn sends_and_joins_are_drawn() {
    let (m, d) = (
        draw(&example("map_reduce.ag"), Format::Mermaid),
        draw(&example("map_reduce.ag"), Format::Dot),
    );
    assert!(
        m.contains("split ==>|\"send for item in items\"| square"),
        "{m}"
    );
    assert!(
        d.contains("\"split\" -> \"square\" [label=\"send for item in items\", style=bold];"),
        "{d}"
    );

    let m = draw(&example("parallel_join.ag"), Format::Mermaid);
    for l in [
        "search -.->|\"wait\"| report__join",
        "extract -.->|\"wait\"| report__join",
        "report__join --> report",
    ] {
        assert!(m.contains(l), "{l}\n{m}");
    }
    // No plain edge from a source straight to the target: the barrier is visible.
    assert!(
        !m.contains("search --> report") && !m.contains("extract --> report\n"),
        "{m}"
    );
}

#[test]
fn research_nests_its_subgraph() {
    let m = draw(&example("research.ag"), Format::Mermaid);
    let open = m
        .find("    subgraph research [\"research<br/>subgraph summarize\"]\n")
        .expect("cluster");
    let close = open + m[open..].find("\n    end\n").expect("end of cluster");
    let inside = &m[open..close];
    for n in [
        "research__START",
        "research__count",
        "research__write",
        "research__END",
    ] {
        assert!(
            inside.contains(&format!("        {n}")),
            "{n} not inside the cluster\n{m}"
        );
    }
    assert!(inside.contains("research__count --> research__write"));
    assert!(
        m.contains("    plan --> research\n    research --> done\n"),
        "{m}"
    );

    let d = draw(&example("research.ag"), Format::Dot);
    let open = d
        .find("    subgraph \"cluster_research\" {\n")
        .expect("cluster");
    let close = open + d[open..].find("\n    }\n").expect("end of cluster");
    assert!(
        d[open..close].contains("        \"research__count\" [label=\"count\"];"),
        "{d}"
    );
    assert!(d.contains("compound=true;"));
    assert!(
        d.contains("\"plan\" -> \"research__START\" [lhead=\"cluster_research\"];"),
        "{d}"
    );
    assert!(
        d.contains("\"research__END\" -> \"done\" [ltail=\"cluster_research\"];"),
        "{d}"
    );
}

const TRICKY: &str = r##"
graph tricky {
  state {
    msg: string = ""
    items: list<string> = []
  }
  node end { set { msg: "x" } }
  node ask: interrupt { value: msg }
  node inner: subgraph "child.ag" { in { msg: msg } }
  node fan
  START -> route {
    msg == "a|b<c>&\"q\"#" => end
    len(items) > 0 and   # a comment inside the condition
      msg != "" => [ask, send fan for it in items { x: it }]
    else => inner
  }
  [end, inner] -> ask -> END
  fan -> END
  interrupt before end
  interrupt after ask, inner
}
"##;

const CHILD: &str = r#"
graph child {
  state { msg: string = "" }
  node end { set { msg: "child" } }
  node again: subgraph "tricky.ag"
  START -> end -> END
}
"#;

fn tricky() -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tricky.ag"), TRICKY).unwrap();
    std::fs::write(dir.path().join("child.ag"), CHILD).unwrap();
    let project = load(&dir.path().join("tricky.ag"));
    (dir, project)
}

#[test]
fn labels_and_ids_are_escaped() {
    let (_dir, project) = tricky();
    let m = render(&project, Format::Mermaid).unwrap();
    // `end` is Mermaid syntax: the node gets another id; its label stays `end`.
    assert!(
        m.contains("    end_2[\"end<br/>interrupt before\"]:::interrupt\n"),
        "{m}"
    );
    assert!(
        !m.lines()
            .any(|l| l.trim().starts_with("end[") || l.contains(" end\n")),
        "{m}"
    );
    assert!(
        m.contains(
            "START -.->|\"msg == #quot;a#124;b#lt;c#gt;#amp;\\#quot;q\\#quot;#35;#quot;\"| end_2"
        ),
        "{m}"
    );
    // Comments are dropped and whitespace collapsed; a send arm is thick, its label says both.
    let cond = "len(items) #gt; 0 and msg != #quot;#quot;";
    assert!(m.contains(&format!("START -.->|\"{cond}\"| ask")), "{m}");
    assert!(
        m.contains(&format!("START ==>|\"{cond}: send for it in items\"| fan")),
        "{m}"
    );
    assert!(m.contains("START -.->|\"else\"| inner"), "{m}");
    assert!(
        m.contains("ask{{\"ask<br/>(interrupt)<br/>interrupt after\"}}:::interrupt"),
        "{m}"
    );
    assert!(
        m.contains("subgraph inner [\"inner<br/>subgraph child<br/>interrupt after\"]"),
        "{m}"
    );
    // Mermaid labels hold no raw quote: every `"` opens or closes a label.
    for l in m
        .lines()
        .filter(|l| l.contains('"') && !l.starts_with("title:"))
    {
        let inner: Vec<&str> = l.split('"').collect();
        assert!(inner.len() == 3, "unbalanced quotes: {l}");
        assert!(
            !inner[1].contains(['<', '>', '|', '&']) || inner[1].contains("<br/>"),
            "{l}"
        );
    }
    // Child ids are prefixed; the cycle back to tricky.ag is not followed.
    assert!(m.contains("inner__end[\"end\"]"), "{m}");
    assert!(
        m.contains("inner__again[\"again<br/>subgraph (unresolved)\"]"),
        "{m}"
    );
    assert!(m.contains("inner -.->|\"wait\"| ask__join"), "{m}");

    let d = render(&project, Format::Dot).unwrap();
    assert!(
        d.contains(r##"[label="msg == \"a|b<c>&\\\"q\\\"#\"", style=dashed]"##),
        "{d}"
    );
    assert!(d.contains("\"inner__END\" -> \"ask__join\" [ltail=\"cluster_inner\", label=\"wait\", style=dotted];"), "{d}");
    assert!(
        d.contains(r#""end_2" [label="end\ninterrupt before", style="rounded,filled""#),
        "{d}"
    );
    validate_dot("tricky", &d);
}

#[test]
fn bad_projects_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let p = Project::from_source(&dir.path().join("empty.ag"), String::new());
    assert!(render(&p, Format::Dot)
        .unwrap_err()
        .contains("declares no graph"));
    let p = Project::from_source(
        &dir.path().join("bad.ag"),
        "graph g { node a: subgraph \"nope.ag\"\n START -> a }".into(),
    );
    let m = render(&p, Format::Mermaid).unwrap();
    assert!(m.contains("a[\"a<br/>subgraph (unresolved)\"]"), "{m}");
}

#[test]
fn formats_parse() {
    assert_eq!("mermaid".parse::<Format>(), Ok(Format::Mermaid));
    assert_eq!("DOT".parse::<Format>(), Ok(Format::Dot));
    assert!("svg".parse::<Format>().unwrap_err().contains("mermaid"));
    assert_eq!(Format::default().to_string(), "mermaid");
}

fn validate_dot(what: &str, dot: &str) {
    let Some(program) = agentgraph_test_support::require_program(
        &["dot"],
        &[],
        "Graphviz `dot` (apt-get install graphviz)",
    ) else {
        return;
    };
    let mut child = Command::new(program)
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running `dot` for {what}: {e}"));
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(dot.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "dot rejects {what}: {stderr}\n{dot}"
    );
}

#[test]
fn dot_output_parses_with_graphviz() {
    for ex in examples() {
        validate_dot(&stem(&ex), &draw(&ex, Format::Dot));
    }
}
