use agentgraph_dsl::*;

const COUNTER: &str = r#"
# graphs/examples/counter.ag
graph counter {
  state {
    count: int = 0
    trace: list<string> = [] reduce append
    limit: int = 3
    private notes: list<string> = [] reduce append
    scratch: json? ephemeral
  }
  input { count, limit }
  model main = anthropic { model: "claude-sonnet-4-20250514", max_tokens: 16000, temperature: 0 }
  prompt system = """
    You are helpful.
    {{ draft | json }}
  """
  tools kit = [search_notes, edit_note { model: main }]

  node bump {
    set { count: count + 1, trace: ["bump"] }
    retry { max_attempts: 3, initial: 500ms }
    timeout: 60s
  }
  node agent: llm { model: main, system: [system], tools: kit }
  node sub: subgraph "child.ag" { in { x: count * 2 } }

  START -> bump
  bump -> route {
    count < limit and not (count == 2) => bump
    else          => END
  }
  [bump, agent] -> sub -> END
  split -> send work for item in items { item: item }
  interrupt before agent, sub
  config { recursion_limit: 100 }
}
"#;

#[test]
fn parses_the_design_example() {
    let p = parse(COUNTER);
    for d in &p.diagnostics {
        eprintln!("{}", diagnostic::render(d, COUNTER, false, 100));
    }
    assert!(p.diagnostics.is_empty());
    let f = p.file.unwrap();
    assert_eq!(f.graphs.len(), 1);
    let g = &f.graphs[0];
    assert_eq!(g.name.name, "counter");
    println!("{}", serde_json::to_string_pretty(&f).unwrap());
    assert_eq!(g.items.len(), 14);
}

#[test]
fn several_mistakes_give_several_diagnostics() {
    let src = r#"graph g {
  state {
    count int = 0
  }
  nodes:
    - a
  node a { set { count: count + } }
  a.add_conditional_edges("x")
  START -> a
}
"#;
    let p = parse(src);
    for d in &p.diagnostics {
        eprintln!("{}", diagnostic::render(d, src, false, 100));
    }
    assert!(p.diagnostics.len() >= 4, "{}", p.diagnostics.len());
}
