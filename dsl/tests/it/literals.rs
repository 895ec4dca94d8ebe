//! Literals and line endings: what the parser refuses (E0004) and what it accepts.

fn codes(src: &str) -> Vec<&'static str> {
    agentgraph_dsl::parse(src)
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect()
}

fn graph(entry: &str) -> String {
    format!("graph g {{\n  node a {{\n    {entry}\n  }}\n  START -> a -> END\n}}\n")
}

#[test]
fn overflowing_duration_literal_is_a_diagnostic() {
    assert_eq!(codes(&graph("timeout: 99999999999999999999h")), ["E0004"]);
    assert_eq!(codes(&graph("timeout: 5124095576031h")), ["E0004"]);
    assert!(codes(&graph("timeout: 5124095576030h")).is_empty());
}

#[test]
fn lone_surrogate_escape_is_a_diagnostic() {
    let src = graph(r#"set { s: "a\uD800b" }"#);
    let d = agentgraph_dsl::parse(&src).diagnostics;
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].code, "E0004");
    assert_eq!(&src[d[0].span.start..d[0].span.end], r"\uD800");
    assert!(codes(&graph(r#"set { s: "\u00e9" }"#)).is_empty());
}

#[test]
fn integer_above_i64_max_is_refused() {
    assert_eq!(codes(&graph("set { n: 9223372036854775808 }")), ["E0004"]);
    assert!(codes(&graph("set { n: 9223372036854775807 }")).is_empty());
    assert!(codes(&graph("set { n: 9223372036854775808.0 }")).is_empty());
}

#[test]
fn bom_crlf_and_cr_only_line_endings_are_accepted() {
    let src = "# a comment\ngraph g {\n  state { n: int = 0 } # another\n  node a {\n    set { n: 1 }\n  }\n  START -> a -> END\n}\n";
    assert!(codes(src).is_empty());
    let bom = format!("\u{feff}{src}");
    assert!(codes(&bom).is_empty());
    let crlf = src.replace('\n', "\r\n");
    assert!(codes(&crlf).is_empty());
    assert!(codes(&format!("\u{feff}{crlf}")).is_empty());
    let cr = src.replace('\n', "\r");
    assert!(
        codes(&cr).is_empty(),
        "{:?}",
        agentgraph_dsl::parse(&cr).diagnostics
    );
    let f = agentgraph_dsl::parse(&cr).file.expect("a tree");
    assert_eq!(f.graphs.len(), 1);
}

#[test]
fn file_of_dev_zero_does_not_hang_check() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = "graph g {\n  prompt p = file(\"/dev/zero\")\n  node a {\n    set { }\n  }\n  START -> a -> END\n}\n";
    let project = agentgraph_dsl::Project::from_source(&dir.path().join("g.ag"), src.into());
    let diags = project.check(&agentgraph_dsl::Registry::default());
    assert!(
        diags
            .iter()
            .any(|d| d.is_error() && format!("{d:?}").contains("not a regular file")),
        "{diags:?}"
    );
}

#[test]
fn invalid_utf8_is_reported_with_line_and_column() {
    let dir = tempfile::tempdir().expect("temp dir");
    let p = dir.path().join("bad.ag");
    std::fs::write(&p, b"graph g {\n  # caf\xc3\xa9 \xff\n}\n").expect("written");
    let e = agentgraph_dsl::Project::load(&p).err().expect("refused");
    let msg = format!("{e}: {:?}", std::error::Error::source(&e));
    assert!(msg.contains("line 2, column 10"), "{msg}");
}

#[test]
fn check_of_a_10000_node_chain_completes() {
    let n = 10_000;
    let mut src = String::from("graph big {\n  state { n: int = 0 }\n");
    for i in 0..n {
        src.push_str(&format!("  node n{i} {{ set {{ n: n + 1 }} }}\n"));
    }
    src.push_str("  START -> n0\n");
    for i in 0..n - 1 {
        src.push_str(&format!("  n{i} -> n{}\n", i + 1));
    }
    src.push_str(&format!("  n{} -> END\n}}\n", n - 1));
    let dir = tempfile::tempdir().expect("temp dir");
    let project = agentgraph_dsl::Project::from_source(&dir.path().join("big.ag"), src);
    let diags = project.check(&agentgraph_dsl::Registry::default());
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
}

#[test]
fn file_inside_set_is_caught_by_check() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("notes.txt"), "hello").expect("written");
    let src = "graph g {\n  state { t: string = \"\" }\n  prompt p = file(\"notes.txt\")\n  node a {\n    set { t: file(\"notes.txt\") }\n  }\n  START -> a -> END\n}\n";
    let project = agentgraph_dsl::Project::from_source(&dir.path().join("g.ag"), src.into());
    let diags = project.check(&agentgraph_dsl::Registry::default());
    let codes: Vec<&str> = diags.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["E0253"], "{diags:?}");
}
