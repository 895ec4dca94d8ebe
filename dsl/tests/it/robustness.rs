//! Robustness: a few thousand generated inputs (token soup, and mutations of the fixtures and
//! example graphs) go through the parser, the checker, the renderer and, when they check clean,
//! the compiler. Nothing may panic, and every diagnostic must point inside its text, on character
//! boundaries.
//!
//! The generator is seeded, so a failure reproduces; the failing input is printed. Set
//! `AG_ROBUSTNESS_CASES=100000` for a longer local run (the default keeps the test to a few
//! seconds in debug builds). For open-ended fuzzing see `dsl/fuzz` (docs/dsl-diagnostics.md).

use agentgraph_dsl::{Diagnostic, Project, Registry};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// splitmix64: small, fast, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Pieces of the language and of its neighbours, for token soup and insertions.
#[rustfmt::skip]
const VOCAB: &[&str] = &[
    "graph", "use", "as", "state", "input", "output", "model", "prompt", "tools", "node", "subgraph", "route", "send",
    "for", "in", "interrupt", "before", "after", "config", "reduce", "private", "ephemeral", "else", "START", "END",
    "end", "set", "retry", "timeout", "value", "write", "llm", "noop", "and", "or", "not", "true", "false", "null",
    "True", "int", "string", "float", "bool", "json", "messages", "list", "map", "list<int>", "map<string>", "json?",
    "append", "add_messages", "merge", "sum", "len", "last", "env", "file", "range", "join", "count", "items", "x",
    "a", "b", "item", "recursion_limit", "max_attempts", "anthropic", "search_notes", "{", "}", "[", "]", "(", ")",
    "<", ">", ":", ",", ".", "=", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "?", "->", "=>", "-->", ";", "|",
    "$", "@", "\\", "\"", "\"\"\"", "\"x\"", "\"{{ x }}\"", "\"{{ x | json }}\"", "\"{{\"", "\"}}\"", "\"\\u00e9\"",
    "\"\\q\"", "\"lib/child.ag\"", "\"nope.ag\"", "={{ $json.x }}", "0", "1", "-1", "3.5", "1e309", "99999999999999999999",
    "500ms", "10s", "2m", "1h", "0s", "# comment", "#", "\n", "\n", "\n", " ", " ", "\t", "\r\n", "é", "🦀", "\u{301}",
    "\u{0}", "\u{feff}", "ß", "Ω", "nodes:", "- a", "add_edge(", "add_conditional_edges", "if", "elif",
];

/// Splits text into tokens: names and numbers, strings, whitespace runs, single characters.
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let len = if c.is_alphanumeric() || c == '_' {
            rest.find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len())
        } else if c.is_whitespace() {
            rest.find(|ch: char| !ch.is_whitespace())
                .unwrap_or(rest.len())
        } else if c == '"' {
            rest[1..]
                .find(['"', '\n'])
                .map_or(rest.len(), |i| i + 2)
                .min(rest.len())
        } else {
            c.len_utf8()
        };
        let len = (1..=len)
            .rev()
            .find(|l| rest.is_char_boundary(*l))
            .unwrap_or(c.len_utf8());
        out.push(&rest[..len]);
        rest = &rest[len..];
    }
    out
}

fn corpus() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "tests/fixtures/ok",
        "tests/fixtures/ok/lib",
        "tests/fixtures/err",
        "../graphs/examples",
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "ag"))
            .collect();
        paths.sort();
        files.extend(paths.iter().filter_map(|p| std::fs::read_to_string(p).ok()));
    }
    assert!(
        files.len() >= 20,
        "the corpus is too small: {} files",
        files.len()
    );
    files
}

fn soup(rng: &mut Rng) -> String {
    let n = rng.below(60);
    (0..n)
        .map(|_| *rng.pick(VOCAB))
        .collect::<Vec<_>>()
        .join(if rng.below(2) == 0 { " " } else { "" })
}

fn mutate(rng: &mut Rng, base: &str, other: &str) -> String {
    let mut toks = tokens(base);
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        if toks.is_empty() {
            toks.push(*rng.pick(VOCAB));
        }
        let i = rng.below(toks.len());
        match rng.below(8) {
            0 => {
                toks.remove(i);
            }
            1 => {
                let t = toks[i];
                toks.insert(i, t);
            }
            2 => {
                let j = rng.below(toks.len());
                toks.swap(i, j);
            }
            3 => toks.insert(i, *rng.pick(VOCAB)),
            4 => toks[i] = *rng.pick(VOCAB),
            5 => {
                // Drop a run of tokens (a lost line or block end).
                let n = rng.below(12).min(toks.len() - i);
                toks.drain(i..i + n);
            }
            6 => {
                // Splice in a run of tokens from another file.
                let o = tokens(other);
                if !o.is_empty() {
                    let a = rng.below(o.len());
                    let b = (a + rng.below(20)).min(o.len());
                    for (k, t) in o[a..b].iter().enumerate() {
                        toks.insert(i + k, t);
                    }
                }
            }
            _ => toks.truncate(i),
        }
    }
    let mut text: String = toks.concat();
    if rng.below(10) == 0 {
        // Cut at an arbitrary character.
        let cut = rng.below(text.len() + 1);
        let cut = (0..=cut)
            .rev()
            .find(|c| text.is_char_boundary(*c))
            .unwrap_or(0);
        text.truncate(cut);
    }
    text
}

fn check_spans(what: &str, text: &str, d: &Diagnostic) {
    let spans =
        std::iter::once((d.span, &d.label)).chain(d.labels.iter().map(|l| (l.span, &l.message)));
    for (s, label) in spans {
        assert!(
            s.start <= s.end && s.end <= text.len(),
            "{what}: {} `{}` (label `{label}`) has span {}..{} outside the text ({} bytes)",
            d.code,
            d.message,
            s.start,
            s.end,
            text.len()
        );
        assert!(
            text.is_char_boundary(s.start) && text.is_char_boundary(s.end),
            "{what}: {} `{}` has span {}..{} off character boundaries",
            d.code,
            d.message,
            s.start,
            s.end
        );
    }
    assert!(!d.message.is_empty(), "{what}: {} has no message", d.code);
}

/// Everything a user-facing command does with a file, minus running it.
fn exercise(dir: &Path, text: &str, render: bool) {
    // The project parses the text too (its diagnostics are the parser's, then the checker's);
    // parsing small inputs on their own as well keeps the parser's API covered at little cost.
    if text.len() < 400 {
        for d in &agentgraph_dsl::parse(text).diagnostics {
            check_spans("parse", text, d);
        }
    }
    let path = dir.join("input.ag");
    let project = Project::from_source(&path, text.to_string());
    let reg = Registry::default();
    let diags = project.check(&reg);
    let parsed = project.root_source().is_some_and(|s| s.ast.is_some());
    assert!(parsed || !diags.is_empty(), "no tree and no diagnostic");
    let name = path.display().to_string();
    for d in &diags {
        assert_eq!(d.file, name, "diagnostic about another file: {}", d.message);
        check_spans("check", text, d);
        let _ = project.to_json(d);
        if render {
            let out = project.render(d, false, 80);
            assert!(out.contains(d.code), "rendering lost the code: {out}");
        }
    }
    if !diags.iter().any(Diagnostic::is_error) {
        let _ = project.compile(&reg);
    }
}

fn run(name: &str, dir: &Path, text: &str, render: bool) {
    let result = catch_unwind(AssertUnwindSafe(|| exercise(dir, text, render)));
    if let Err(e) = result {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        panic!(
            "{name} failed: {msg}\ninput ({} bytes): {text:?}",
            text.len()
        );
    }
}

fn cases(default: usize) -> usize {
    std::env::var("AG_ROBUSTNESS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn token_soup_never_panics() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut rng = Rng(0x5eed_0001);
    for i in 0..cases(1500) {
        let text = soup(&mut rng);
        run(&format!("soup #{i}"), dir.path(), &text, i % 4 == 0);
    }
}

#[test]
fn mutated_graphs_never_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let files = corpus();
    let mut rng = Rng(0x5eed_0002);
    for i in 0..cases(2500) {
        let base = rng.pick(&files).clone();
        let other = rng.pick(&files).clone();
        let text = mutate(&mut rng, &base, &other);
        run(&format!("mutation #{i}"), dir.path(), &text, i % 8 == 0);
    }
}

#[test]
fn edge_cases_never_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let long_line = format!(
        "graph g {{ state {{ x: int = {} }} }}",
        "1 + ".repeat(200) + "1"
    );
    let deep = format!(
        "graph g {{ state {{ x: json = {}{} }} }}",
        "[".repeat(200),
        "]".repeat(200)
    );
    let unclosed = format!("graph g {{ {}", "node a { ".repeat(100));
    let inputs = [
        "",
        " ",
        "\n\n\n",
        "#",
        "\u{feff}graph g {}",
        "graph",
        "graph g",
        "graph g {",
        "graph g }",
        "}}}}",
        "{{{{",
        "\"",
        "\"\"\"",
        "graph g { prompt p = \"\"\" }",
        "graph g { node a { set { x: \"{{\" } } }",
        "graph g { node a { set { x: \"{{ }}\" } } }",
        "graph g { node a { set { x: \"{{ | }}\" } } }",
        "graph g { state { x: list<list<list<int>>>? = [] } }",
        "graph g { START -> END }",
        "graph g { START -> route { else => END } }",
        "graph g { START -> send a for x in [1] { } }",
        "graph g { [] -> END }",
        "graph g { state { é: int = 0 } node ñ { set { é: é + 1 } } START -> ñ -> END }",
        "graph g { node a { set { x: 1 } } START -> a -> END } graph h { START -> END }",
        "use \"\" as x",
        "use \"input.ag\" as me\ngraph g { node a: subgraph me\n START -> a -> END }",
        "graph g { node a: subgraph \".\" START -> a -> END }",
        "graph g { prompt p = file(\"\") }",
        "graph g { config { recursion_limit: 99999999999999999999 } }",
        "graph g { node a { timeout: 99999999999999999999h } }",
        "\r\ngraph g {\r\n  state {\r\n    x: int = \"é\r\n  }\r\n}\r\n",
        "graph g {\n  x: \"🦀\n}",
        "graph g {\n  nodes:\n    - 🦀\n}",
        long_line.as_str(),
        deep.as_str(),
        unclosed.as_str(),
    ];
    for (i, text) in inputs.iter().enumerate() {
        run(&format!("edge case #{i}"), dir.path(), text, true);
    }
}

/// A 5 000-operator expression is refused with a diagnostic instead of overflowing the stack of
/// the checker, the formatter or the evaluator.
#[test]
fn very_deep_expressions_are_refused_not_overflowed() {
    let src = format!("graph g {{\n  state {{ x: int = 0 }}\n  node a {{ set {{ x: {}1 }} }}\n  START -> a -> END\n}}\n", "1 + ".repeat(5000));
    let handle = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            let project =
                agentgraph_dsl::Project::from_source(std::path::Path::new("deep.ag"), src.clone());
            let diags = project.check(&agentgraph_dsl::Registry::default());
            let fmt = agentgraph_dsl::fmt::format_source(&src);
            (
                diags.iter().map(|d| d.code).collect::<Vec<_>>(),
                fmt.is_err(),
            )
        })
        .unwrap();
    let (codes, fmt_refused) = handle.join().expect("no stack overflow");
    assert!(
        codes.contains(&agentgraph_dsl::diagnostic::codes::TOO_DEEP.id),
        "{codes:?}"
    );
    assert!(fmt_refused);
}
