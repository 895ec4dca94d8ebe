use agentgraph_dsl::*;
#[test]
fn probe() {
    for src in [
        "graph g { node a { set { count: count + } } }",
        "graph g { node a { x: } }",
        "graph g { a -> }",
        "graph g { state { x: lst<int> } }",
        "graph g { node a: { x: 1 } }",
    ] {
        let p = parse(src);
        eprintln!("{src}: {:?}", p.diagnostics.iter().map(|d| (&d.message, d.span)).collect::<Vec<_>>());
    }
    for e in ["count +", "a and", "f(1,"] {
        eprintln!("{e}: {:?}", parse_expr(e).map(|_| ()).map_err(|d| (d.message, d.span)));
    }
}
