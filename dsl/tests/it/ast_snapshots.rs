//! Snapshots (insta) of the syntax tree of `ok/` fixtures, serialized as JSON (spans are not
//! serialized): what the parser makes of chains and joins, routes, sends and interrupts. Review
//! changes with `cargo insta review`; under `CI=true` a mismatch fails.

use agentgraph_dsl::parse;
use std::path::PathBuf;

fn ast(fixture: &str) -> serde_json::Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ok")
        .join(fixture);
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let parsed = parse(&src);
    assert!(
        parsed.diagnostics.is_empty(),
        "{fixture}: {:?}",
        parsed.diagnostics
    );
    serde_json::to_value(parsed.file.expect("a tree")).expect("the tree serializes")
}

#[test]
fn ast_of_chains_and_joins() {
    insta::assert_json_snapshot!("ast_chains_joins", ast("chains_joins.ag"));
}

#[test]
fn ast_of_routes() {
    insta::assert_json_snapshot!("ast_routes", ast("routes.ag"));
}

#[test]
fn ast_of_sends() {
    insta::assert_json_snapshot!("ast_sends", ast("sends.ag"));
}

#[test]
fn ast_of_interrupts() {
    insta::assert_json_snapshot!("ast_interrupts", ast("interrupts.ag"));
}
