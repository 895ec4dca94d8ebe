//! Deep nesting is refused (E0003) before anything recurses on it: the parser, the checker, the
//! formatter and the diagrams all run here on a thread with a 256 KB stack, far too small for a
//! recursion a thousand levels deep.

use agentgraph_dsl::viz::{self, Format};
use agentgraph_dsl::{Project, Registry};

/// A graph whose one `set` entry holds `open × n`, `1`, `close × n`.
fn graph(open: &str, close: &str, n: usize) -> String {
    format!(
        "graph g {{\n  state {{ x: json = null }}\n  node a {{ set {{ x: {}1{} }} }}\n  START -> a\n}}\n",
        open.repeat(n),
        close.repeat(n)
    )
}

/// Every shape of nesting, each at 1 000 and at 100 000 levels.
fn inputs() -> Vec<(String, String)> {
    let shapes: [(&str, &str, &str); 7] = [
        ("parens", "(", ")"),
        ("lists", "[", "]"),
        ("objects", "{ k: ", " }"),
        ("calls", "len(", ")"),
        ("not", "not ", ""),
        ("minus", "- ", ""),
        ("fields", "", ".f"),
    ];
    let mut out = Vec::new();
    for n in [1_000, 100_000] {
        for (name, open, close) in shapes {
            out.push((format!("{name} × {n}"), graph(open, close, n)));
        }
        out.push((
            format!("generic type × {n}"),
            format!(
                "graph g {{\n  state {{ x: {}int{} }}\n}}\n",
                "list<".repeat(n),
                ">".repeat(n)
            ),
        ));
        out.push((
            format!("route × {n}"),
            format!(
                "graph g {{\n  a -> route {{ {}true => END, else => END }}\n}}\n",
                "not ".repeat(n)
            ),
        ));
    }
    out
}

/// Runs `f` on a thread with a 256 KB stack.
fn small_stack(f: impl FnOnce() + Send + 'static) {
    on_stack(256 * 1024, f)
}

fn on_stack(bytes: usize, f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(bytes)
        .spawn(f)
        .expect("a thread starts")
        .join()
        .expect("the thread ends without a panic");
}

fn has_e0003(diags: &[agentgraph_dsl::Diagnostic]) -> bool {
    diags.iter().any(|d| d.code == "E0003")
}

#[test]
fn deep_nesting_is_e0003_in_parse_check_fmt_and_viz_on_a_small_stack() {
    small_stack(|| {
        let dir = std::env::temp_dir();
        for (name, text) in inputs() {
            let parsed = agentgraph_dsl::parse(&text);
            assert!(has_e0003(&parsed.diagnostics), "{name}: parse");
            let project = Project::from_source(&dir.join("deep.ag"), text.clone());
            let diags = project.check(&Registry::default());
            assert!(has_e0003(&diags), "{name}: check");
            let fmt = agentgraph_dsl::fmt::format_source(&text);
            assert!(fmt.is_err_and(|d| has_e0003(&d)), "{name}: fmt");
            // The diagram refuses a file that does not parse, or draws what parsed.
            let _ = viz::render(&project, Format::Mermaid);
            let _ = viz::render(&project, Format::Dot);
            assert!(
                agentgraph_dsl::parse_expr(&"(".repeat(name.len() * 100)).is_err(),
                "{name}: parse_expr"
            );
        }
    });
}

/// The deepest nesting accepted still fits the 2 MB stack of a server's worker thread.
#[test]
fn nesting_within_the_limit_still_parses() {
    on_stack(2 * 1024 * 1024, || {
        let text = graph("(", ")", 100);
        let parsed = agentgraph_dsl::parse(&text);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let text = graph("not ", "", 100);
        assert!(agentgraph_dsl::parse(&text).diagnostics.is_empty());
        let text = graph("[", "]", 120);
        let project = Project::from_source(&std::env::temp_dir().join("deep.ag"), text.clone());
        let diags = project.check(&Registry::default());
        assert!(!has_e0003(&diags), "{diags:?}");
        assert!(agentgraph_dsl::fmt::format_source(&text).is_ok());
        assert!(viz::render(&project, Format::Dot).is_ok());
    });
}
