//! Property tests: the expression printer against a generator of trees, and whole files with
//! comments and line breaks put between any two tokens.

use super::{ag_files, check, graph, KITCHEN_SINK};
use agentgraph_dsl::ast::{BinOp, Expr, ExprKind, Ident, ObjectLit, Span, UnOp};
use agentgraph_dsl::fmt::format_expr;
use agentgraph_dsl::{parse, parse_expr};
use proptest::prelude::*;
use std::path::PathBuf;
use std::sync::OnceLock;

fn ex(kind: ExprKind) -> Expr {
    Expr {
        kind,
        span: Span::default(),
    }
}

fn id(name: &str) -> Ident {
    Ident {
        name: name.to_string(),
        span: Span::default(),
    }
}

fn leaf() -> impl Strategy<Value = Expr> {
    let texts = vec![
        "null",
        "true",
        "false",
        "0",
        "42",
        "1.5",
        "2.5e-8",
        "1e20",
        "3.0",
        "500ms",
        "2m",
        "1h",
        "\"hi\"",
        "\"a\\\"b\\n\"",
        "\"\"",
        "\"\"\"\n  x\n    y\n\"\"\"",
        "a",
        "b",
        "items",
        "in",
        "else_x",
        "a_fairly_long_name",
    ];
    prop::sample::select(texts).prop_map(|t| parse_expr(t).unwrap_or_else(|d| panic!("{t}: {d:?}")))
}

fn name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["a", "f", "len", "e5", "ms", "x_1", "and_more"])
}

fn binop() -> impl Strategy<Value = BinOp> {
    use BinOp::*;
    prop::sample::select(vec![
        Or, And, Eq, Ne, Lt, Le, Gt, Ge, Add, Sub, Mul, Div, Rem,
    ])
}

fn expr() -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(5, 64, 6, |inner| {
        let key = prop::sample::select(vec!["a", "k_1", "content-type", "with space", "quo\"te"]);
        prop_oneof![
            (inner.clone(), name()).prop_map(|(b, f)| ex(ExprKind::Field {
                base: Box::new(b),
                field: id(f)
            })),
            (inner.clone(), inner.clone()).prop_map(|(b, i)| ex(ExprKind::Index {
                base: Box::new(b),
                index: Box::new(i)
            })),
            (name(), prop::collection::vec(inner.clone(), 0..4))
                .prop_map(|(f, args)| ex(ExprKind::Call { func: id(f), args })),
            prop::collection::vec(inner.clone(), 0..6)
                .prop_map(|items| ex(ExprKind::List { items })),
            prop::collection::vec((key, inner.clone()), 0..4).prop_map(|es| {
                let entries = es.into_iter().map(|(k, v)| (id(k), v)).collect();
                ex(ExprKind::Object {
                    object: ObjectLit {
                        entries,
                        span: Span::default(),
                    },
                })
            }),
            (any::<bool>(), inner.clone()).prop_map(|(not, e)| {
                let op = if not { UnOp::Not } else { UnOp::Neg };
                ex(ExprKind::Unary {
                    op,
                    operand: Box::new(e),
                })
            }),
            (binop(), inner.clone(), inner).prop_map(|(op, l, r)| ex(ExprKind::Binary {
                op,
                lhs: Box::new(l),
                rhs: Box::new(r)
            })),
        ]
    })
}

fn shape(e: &Expr) -> serde_json::Value {
    serde_json::to_value(e).unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The expression printer's output parses back to the same tree, and prints the same again.
    #[test]
    fn printed_expressions_reparse_to_the_same_tree(e in expr()) {
        let text = format_expr(&e);
        let back = parse_expr(&text).map_err(|d| TestCaseError::fail(format!("{text}: {d:?}")))?;
        prop_assert_eq!(shape(&back), shape(&e), "{}", text);
        prop_assert_eq!(format_expr(&back), text);
    }

    /// In a file, with comments sprinkled between the tokens of the expression, formatting keeps
    /// the tree and every comment, and is idempotent (this exercises line breaking too).
    #[test]
    fn formatted_files_keep_tree_and_comments(e in expr(), cuts in prop::collection::vec(any::<bool>(), 0..40)) {
        let text = format_expr(&e);
        let mut with_comments = String::new();
        let mut n = 0;
        for (i, piece) in text.split_inclusive(", ").enumerate() {
            with_comments.push_str(piece);
            if piece.ends_with(", ") && cuts.get(i).copied().unwrap_or(false) {
                n += 1;
                with_comments.push_str(&format!("# c{n}\n"));
            }
        }
        let src = graph(&format!("  node n {{ x: {with_comments} }}\n  prompt p = {text}\n"));
        check(&src, &src);
    }
}

/// Byte positions between two tokens outside strings and comments: places where a comment or
/// a line break can be put without changing the tree.
fn gaps(src: &str) -> Vec<usize> {
    let b = src.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let splits_token = |i: usize| {
        let (p, n) = (b[i - 1], b[i]);
        (word(p) && word(n))
            || matches!(
                (p, n),
                (b'-', b'>')
                    | (b'=', b'>')
                    | (b'=', b'=')
                    | (b'!', b'=')
                    | (b'<', b'=')
                    | (b'>', b'=')
            )
            || (p == b'.' && n.is_ascii_digit())
            || (n == b'.' && p.is_ascii_digit())
            || (matches!(p, b'e' | b'E') && matches!(n, b'+' | b'-'))
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if i > 0 && !splits_token(i) {
            out.push(i);
        }
        match b[i] {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' if src[i..].starts_with("\"\"\"") => {
                i = src[i + 3..]
                    .find("\"\"\"")
                    .map_or(b.len(), |j| i + 3 + j + 2);
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Every shipped graph, ok fixture and error fixture that parses, and the kitchen sink.
fn corpus_sources() -> &'static [String] {
    static CORPUS: OnceLock<Vec<String>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        ag_files(&root.join("../graphs"), &mut files);
        ag_files(&root.join("tests/fixtures"), &mut files);
        let mut srcs: Vec<String> = files
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .filter(|s| parse(s).diagnostics.is_empty())
            .collect();
        srcs.push(KITCHEN_SINK.to_string());
        srcs
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Comments, line breaks and blank lines put between any two tokens of a real file: the
    /// tree and every comment survive, and the result is a fixed point.
    #[test]
    fn comments_and_breaks_anywhere(which in 0usize..1000, edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4), 0..24)) {
        let srcs = corpus_sources();
        let src = &srcs[which % srcs.len()];
        let gaps = gaps(src);
        let mut at: Vec<(usize, u8)> = match gaps.len() {
            0 => Vec::new(),
            n => edits.iter().map(|(i, k)| (gaps[i.index(n)], *k)).collect(),
        };
        at.sort_unstable();
        at.dedup_by_key(|a| a.0);
        let mut text = src.to_string();
        for (n, (pos, kind)) in at.iter().enumerate().rev() {
            let with = match kind {
                0 => format!("# x{n}\n"),
                1 => format!(" # y{n}\n"),
                2 => "\n".to_string(),
                _ => "\n\n".to_string(),
            };
            text.insert_str(*pos, &with);
        }
        check(&text, &text);
    }
}
