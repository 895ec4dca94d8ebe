//! The canonical formatter: round trips over every shipped graph and fixture (same tree, same
//! comments, idempotent), targeted style cases, and property tests of the expression printer.

#[path = "../fmt/props.rs"]
mod props;

use agentgraph_dsl::ast;
use agentgraph_dsl::fmt::{format_expr, format_source, is_formatted};
use agentgraph_dsl::{parse, parse_expr};
use std::path::{Path, PathBuf};

// ---- helpers -------------------------------------------------------------------------------

/// The comment texts of `src` (an independent scanner: skips plain and triple-quoted strings).
fn comment_texts(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find(['#', '"']) {
        let tail = &rest[i..];
        if tail.starts_with('#') {
            let end = tail.find('\n').unwrap_or(tail.len());
            out.push(tail[..end].trim_end().to_string());
            rest = &tail[end..];
        } else if let Some(body) = tail.strip_prefix("\"\"\"") {
            rest = body.find("\"\"\"").map_or("", |j| &body[j + 3..]);
        } else {
            let mut chars = tail[1..].char_indices();
            let mut end = tail.len();
            while let Some((j, c)) = chars.next() {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' | '\n' => {
                        end = j + 2;
                        break;
                    }
                    _ => {}
                }
            }
            rest = &tail[end.min(tail.len())..];
        }
    }
    out.sort();
    out
}

/// Formats `src` and checks everything the formatter promises; returns the formatted text.
fn check(name: &str, src: &str) -> String {
    let before = parse(src);
    assert!(
        before.diagnostics.is_empty(),
        "{name} does not parse: {:?}",
        before.diagnostics
    );
    let out = format_source(src).unwrap_or_else(|d| panic!("{name}: {d:?}"));
    let after = parse(&out);
    assert!(
        after.diagnostics.is_empty(),
        "{name}: formatted text does not parse: {:?}\n{out}",
        after.diagnostics
    );
    let (a, b) = (before.file.expect("a tree"), after.file.expect("a tree"));
    assert!(ast::same_shape(&a, &b), "{name}: the tree changed\n{out}");
    let again = format_source(&out).unwrap_or_else(|d| panic!("{name}: {d:?}"));
    assert_eq!(again, out, "{name}: formatting is not idempotent");
    assert_eq!(is_formatted(&out), Ok(true), "{name}");
    assert_eq!(
        comment_texts(src),
        comment_texts(&out),
        "{name}: comments lost or duplicated\n{out}"
    );
    out
}

fn ag_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            ag_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "ag") {
            out.push(p);
        }
    }
}

/// Wraps lines into a graph.
fn graph(body: &str) -> String {
    format!("graph g {{\n{body}}}\n")
}

fn fx(src: &str) -> String {
    format_expr(&parse_expr(src).unwrap_or_else(|d| panic!("{src}: {d:?}")))
}

// ---- the corpus ----------------------------------------------------------------------------

#[test]
fn every_graph_and_ok_fixture_round_trips() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    ag_files(&root.join("../graphs"), &mut files);
    assert!(!files.is_empty(), "no graphs found under graphs/");
    ag_files(&root.join("tests/fixtures/ok"), &mut files);
    for f in files {
        let src = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        check(&f.display().to_string(), &src);
    }
}

/// Error fixtures that parse (their errors come from the checks) format like any file; the
/// others are refused with exactly their parse errors.
#[test]
fn error_fixtures_format_or_are_refused_with_their_parse_errors() {
    let mut files = Vec::new();
    ag_files(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/err"),
        &mut files,
    );
    for f in files {
        let src = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let parsed = parse(&src);
        if parsed.diagnostics.is_empty() {
            check(&f.display().to_string(), &src);
        } else {
            assert_eq!(
                format_source(&src),
                Err(parsed.diagnostics),
                "{}",
                f.display()
            );
        }
    }
}

const KITCHEN_SINK: &str = r#"# header comment
use "child.ag" as child   # trailing on use
graph big {
  state {
    count: int = 0
    trace: list<string> = [] reduce append
    limit: int = 3, # after a comma
    private notes: list<string> = [] reduce append
    scratch: json? ephemeral
    seen: map<bool> = {} reduce merge
    opt: list<map<int>?>? = null
  }
  input  { count, limit }
  output { count }
  model main = anthropic { model: "claude-sonnet-4-20250514", max_tokens: 16000, temperature: 0.70 }
  model fast = openai    { model: "gpt-4o-mini", base_url: env("OPENAI_BASE_URL"), t: 1e3 }
  prompt system = """
    You are helpful. # not a comment
    {{ draft | json }}
  """
  tools kit = [search_notes, read_note, add_notes, link_notes,
                   edit_note { model: main }, remove_note, get_note_field]

  node bump {
    set { count: count + 1, trace: ["bump"] }
    retry { max_attempts: 3, initial: 500ms, backoff: 2.0, max: 10s }
    timeout: 60s
  }
  node agent: llm { model: main, system: [system], tools: kit, opts: { "quoted key": 1 } }
  node sub: subgraph "child.ag" { in { x: count * 2 } }
  node other: subgraph child
  node empty {}
  node bare

  START -> bump
  bump -> route {
    count < limit and not (count == 2) => bump   # loop
    (else).done => [agent, sub]
    else          => END
  }
  [bump, agent] -> sub -> END
  split -> send work for item in items { item: item, n: (1 + 2) * 3 }
  interrupt before agent, sub
  interrupt after bump
  config { recursion_limit: 100 }
}
# footer comment
"#;

#[test]
fn a_file_with_every_construct_round_trips() {
    let out = check("kitchen sink", KITCHEN_SINK);
    assert!(
        out.contains("temperature: 0.70"),
        "floats keep their text\n{out}"
    );
    assert!(out.contains("t: 1e3"), "{out}");
    assert!(out.contains("\"quoted key\": 1"), "{out}");
    assert!(
        out.contains("(else.done)                        => [agent, sub]"),
        "{out}"
    );
    assert!(
        out.contains("    You are helpful. # not a comment\n"),
        "{out}"
    );
    assert!(out.starts_with(
        "# header comment\nuse \"child.ag\" as child  # trailing on use\n\ngraph big {\n"
    ));
    assert!(out.ends_with("}\n# footer comment\n"), "{out}");
}

// ---- expressions ---------------------------------------------------------------------------

#[test]
fn parentheses_are_minimal_but_kept_where_needed() {
    for (src, want) in [
        ("(a + b) * c", "(a + b) * c"),
        ("a + (b * c)", "a + b * c"),
        ("a - (b - c)", "a - (b - c)"),
        ("(a - b) - c", "a - b - c"),
        ("a / (b * c) % d", "a / (b * c) % d"),
        ("not (a and b)", "not (a and b)"),
        ("(not a) and b", "not a and b"),
        ("(a or b) and c", "(a or b) and c"),
        ("a or (b and c)", "a or b and c"),
        ("-(a + b)", "-(a + b)"),
        ("(-a).b", "(-a).b"),
        ("-(a.b)", "-a.b"),
        ("(a + b)[0]", "(a + b)[0]"),
        ("-(-a)", "- -a"),
        ("not (not a)", "not not a"),
        ("a - (-b)", "a - -b"),
        ("(a < b) == c", "a < b == c"),
        ("a < (b == c)", "a < (b == c)"),
        (
            "f((a), [(1 + 2) * 3], {k: (x)})",
            "f(a, [(1 + 2) * 3], { k: x })",
        ),
        ("x[\"a\"].b[0]", "x[\"a\"].b[0]"),
        (
            "{\"content-type\": 1, a: {}}",
            "{ \"content-type\": 1, a: {} }",
        ),
        ("1.5e3 + 2.0", "1500.0 + 2.0"),
        ("500ms + 2m", "500ms + 2m"),
    ] {
        assert_eq!(fx(src), want, "{src}");
    }
}

#[test]
fn a_route_condition_that_starts_with_else_keeps_its_parentheses() {
    let src = graph("  a -> route {\n    (else) => b\n    else => c\n  }\n");
    let out = check("else cond", &src);
    assert!(out.contains("    (else) => b\n    else   => c\n"), "{out}");
}

// ---- layout --------------------------------------------------------------------------------

#[test]
fn the_canonical_form_of_a_small_graph() {
    let src = "graph   counter{\n\n\n  state{count:int=0\n trace : list< string >=[ ]reduce append,limit:int=3}\n\n\n\n  node bump{set{count:count+1,trace:[\"bump\"]}}\n  START->bump\n  bump->route{count<limit=>bump,else=>END}\n\n}\n";
    let want = "graph counter {\n  state {\n    count: int = 0\n    trace: list<string> = [] reduce append\n    limit: int = 3\n  }\n\n  node bump {\n    set { count: count + 1, trace: [\"bump\"] }\n  }\n  START -> bump\n  bump -> route {\n    count < limit => bump\n    else          => END\n  }\n}\n";
    assert_eq!(check("small", src), want);
    assert_eq!(is_formatted(src), Ok(false));
    assert_eq!(is_formatted(want), Ok(true));
}

#[test]
fn long_objects_wrap_one_entry_per_line() {
    let src = graph("  model main = anthropic { model: \"claude-sonnet-4-20250514\", max_tokens: 16000, temperature: 0 }\n  model fast = openai { model: \"gpt-4o-mini\" }\n  node n: llm { a: [aaaaaaaaaaaa, bbbbbbbbbbbbbbbb, cccccccccccccccc, dddddddddddddddd, eeeeeeeeeeee] }\n");
    let want = graph(concat!(
        "  model main = anthropic {\n",
        "    model: \"claude-sonnet-4-20250514\",\n",
        "    max_tokens: 16000,\n",
        "    temperature: 0,\n",
        "  }\n",
        "  model fast = openai { model: \"gpt-4o-mini\" }\n",
        "  node n: llm {\n",
        "    a: [\n",
        "      aaaaaaaaaaaa,\n",
        "      bbbbbbbbbbbbbbbb,\n",
        "      cccccccccccccccc,\n",
        "      dddddddddddddddd,\n",
        "      eeeeeeeeeeee,\n",
        "    ]\n",
        "  }\n",
    ));
    assert_eq!(check("long", &src), want);
}

#[test]
fn long_tool_sets_and_calls_wrap() {
    let src = graph("  tools kit = [search_notes, read_note, add_notes, link_notes,\n                 edit_note { model: main }, remove_note]\n  prompt p = concat(\"a fairly long first argument\", \"and a second one\", \"and a third\")\n");
    let want = graph(concat!(
        "  tools kit = [\n",
        "    search_notes,\n",
        "    read_note,\n",
        "    add_notes,\n",
        "    link_notes,\n",
        "    edit_note { model: main },\n",
        "    remove_note,\n",
        "  ]\n",
        "  prompt p = concat(\n",
        "    \"a fairly long first argument\",\n",
        "    \"and a second one\",\n",
        "    \"and a third\",\n",
        "  )\n",
    ));
    assert_eq!(check("tools", &src), want);
}

#[test]
fn route_arms_are_aligned() {
    let src = graph(
        "  a -> route { has_tool_calls(last(messages)) => tools, x > 1 => [b, c]\n else => END }\n",
    );
    let want = graph(concat!(
        "  a -> route {\n",
        "    has_tool_calls(last(messages)) => tools\n",
        "    x > 1                          => [b, c]\n",
        "    else                           => END\n",
        "  }\n",
    ));
    assert_eq!(check("route", &src), want);
}

#[test]
fn node_bodies_with_blocks_or_comments_are_multi_line() {
    let src = graph("  node a { set { x: 1 } }\n  node b: llm { model: m, tools: t }\n  node c { x: 1 # why\n  }\n  node d: subgraph \"d.ag\" { in { x: 1 } out { y: 2 } }\n");
    let want = graph(concat!(
        "  node a {\n",
        "    set { x: 1 }\n",
        "  }\n",
        "  node b: llm { model: m, tools: t }\n",
        "  node c {\n",
        "    x: 1  # why\n",
        "  }\n",
        "  node d: subgraph \"d.ag\" {\n",
        "    in { x: 1 }\n",
        "    out { y: 2 }\n",
        "  }\n",
    ));
    assert_eq!(check("bodies", &src), want);
}

#[test]
fn blank_lines_collapse_to_one_and_none_at_block_edges() {
    let src = graph("\n\n  node a\n\n\n\n  node b\n  node c\n\n");
    assert_eq!(
        check("blanks", &src),
        graph("  node a\n\n  node b\n  node c\n")
    );
}

#[test]
fn a_field_before_a_private_field_gets_a_comma() {
    let src =
        graph("  state {\n    a: int = 1,\n    private b: int\n    c: json? ephemeral\n  }\n");
    let out = check("private", &src);
    assert!(
        out.contains("    a: int = 1,\n    private b: int\n    c: json? ephemeral\n"),
        "{out}"
    );
}

// ---- strings -------------------------------------------------------------------------------

#[test]
fn strings_are_printed_exactly_as_written() {
    let src = graph(concat!(
        "  prompt a = \"esc \\\" \\\\ \\n \\t \\u00e9 \\{ # not a comment\"\n",
        "  prompt b = \"\"\"\n",
        "      indented # not a comment \"\n",
        "    less\n",
        "  \"\"\"   # a real comment\n",
        "  node n { s: \"\"\"one line\"\"\" }\n",
    ));
    let out = check("strings", &src);
    assert!(
        out.contains("  prompt a = \"esc \\\" \\\\ \\n \\t \\u00e9 \\{ # not a comment\"\n"),
        "{out}"
    );
    assert!(out.contains("  prompt b = \"\"\"\n      indented # not a comment \"\n    less\n  \"\"\"  # a real comment\n"), "{out}");
    assert!(
        out.contains("  node n { s: \"\"\"one line\"\"\" }\n"),
        "{out}"
    );
    assert_eq!(comment_texts(&out), vec!["# a real comment".to_string()]);
}

#[test]
fn a_multi_line_string_breaks_its_node_body() {
    let src = graph("  node n: llm { system: \"\"\"\n    hi\n  \"\"\", model: m }\n");
    let want = graph("  node n: llm {\n    system: \"\"\"\n    hi\n  \"\"\"\n    model: m\n  }\n");
    assert_eq!(check("multi-line string", &src), want);
}

// ---- comments ------------------------------------------------------------------------------

#[test]
fn comments_stay_where_they_belong() {
    let src = concat!(
        "# file header\n",
        "\n",
        "graph g {   # after the brace\n",
        "  # before state\n",
        "  state {\n",
        "    a: int = 0   # trailing a\n",
        "    # before b\n",
        "    b: int\n",
        "    # end of state\n",
        "  }\n",
        "\n",
        "  # before the node\n",
        "  node n { x: [1, # one\n",
        "    2] }\n",
        "  a -> route { # route header\n",
        "    x => y  # arm\n",
        "    # before else\n",
        "    else => z\n",
        "    # end of route\n",
        "  } # after route\n",
        "  b -> c # edge\n",
        "  # end of graph\n",
        "}\n",
        "# end of file\n",
    );
    let want = concat!(
        "# file header\n",
        "\n",
        "graph g {  # after the brace\n",
        "  # before state\n",
        "  state {\n",
        "    a: int = 0  # trailing a\n",
        "    # before b\n",
        "    b: int\n",
        "    # end of state\n",
        "  }\n",
        "\n",
        "  # before the node\n",
        "  node n {\n",
        "    x: [\n",
        "      1,  # one\n",
        "      2,\n",
        "    ]\n",
        "  }\n",
        "  a -> route {  # route header\n",
        "    x    => y  # arm\n",
        "    # before else\n",
        "    else => z\n",
        "    # end of route\n",
        "  }  # after route\n",
        "  b -> c  # edge\n",
        "  # end of graph\n",
        "}\n",
        "# end of file\n",
    );
    assert_eq!(check("comments", src), want);
}

#[test]
fn comments_inside_one_line_constructs_move_to_the_line_end() {
    let src = graph("  node n {\n    x: a +   # one\n      b  # two\n    y: 1\n  }\n  node m: # three\n    llm\n  interrupt before # four\n    n, m\n");
    let want = graph(concat!(
        "  node n {\n",
        "    x: a + b  # one\n",
        "    # two\n",
        "    y: 1\n",
        "  }\n",
        "  node m: llm  # three\n",
        "  interrupt before n, m  # four\n",
    ));
    assert_eq!(check("inner comments", &src), want);
}

#[test]
fn comments_inside_a_use_stay_before_the_graph() {
    let src = "use \"a.ag\"# one\nas# two\na\ngraph g {}\n";
    let want = "use \"a.ag\" as a  # one\n\n# two\ngraph g {}\n";
    assert_eq!(check("use", src), want);
}

#[test]
fn a_file_of_comments_only_is_kept() {
    assert_eq!(
        format_source("# a\n\n\n# b\n").as_deref(),
        Ok("# a\n\n# b\n")
    );
    assert_eq!(format_source("").as_deref(), Ok(""));
}

// ---- errors --------------------------------------------------------------------------------

#[test]
fn a_file_that_does_not_parse_is_not_formatted() {
    let src = "graph g {\n  node a: llm {\n  a -> \n}\n";
    let errs = format_source(src).expect_err("a parse error");
    assert_eq!(errs, parse(src).diagnostics);
    assert!(!errs.is_empty());
    assert!(is_formatted(src).is_err());
}
