//! The summary of fixed rows.

use crate::fixtures::{row, RowSpec};
use agentgraph_eval::summary::{markdown, median, summarize, Metric};

fn rows() -> Vec<agentgraph_eval::Row> {
    vec![
        row(RowSpec {
            case: "a",
            checklist: (1, 2),
            n8n_accepts: Some(true),
            wall_ms: 1000,
            requests: 3,
            prompt: 100,
            completion: 10,
            tool_calls: 2,
            ..RowSpec::default()
        }),
        row(RowSpec {
            case: "b",
            status: "timeout",
            non_empty: false,
            structure_valid: false,
            checklist: (2, 2),
            n8n_accepts: Some(false),
            wall_ms: 3000,
            requests: 5,
            prompt: 200,
            completion: 20,
            tool_calls: 4,
            ..RowSpec::default()
        }),
        row(RowSpec {
            case: "c",
            checklist: (0, 0),
            wall_ms: 2000,
            requests: 7,
            prompt: 300,
            completion: 30,
            tool_calls: 0,
            ..RowSpec::default()
        }),
        row(RowSpec {
            case: "a",
            graph: "multi",
            wall_ms: 500,
            ..RowSpec::default()
        }),
    ]
}

#[test]
fn rates_times_and_means_per_graph() {
    let s = summarize(&rows());
    assert_eq!(s.len(), 2);
    let single = &s[0];
    assert_eq!((single.graph.as_str(), single.cases), ("single", 3));
    let rate = |m| single.rate(m).expect("a rate");
    assert!((rate(Metric::Done) - 2.0 / 3.0).abs() < 1e-9);
    assert!((rate(Metric::NonEmpty) - 2.0 / 3.0).abs() < 1e-9);
    assert!((rate(Metric::StructureValid) - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(rate(Metric::ConfigurationValid), 1.0);
    // (1/2 + 2/2) / 2: the case without a checklist does not count.
    assert_eq!(rate(Metric::Checklist), 0.75);
    assert_eq!(rate(Metric::ChecklistPass), 0.5);
    assert_eq!(rate(Metric::N8nAccepts), 0.5);
    assert_eq!(single.rate(Metric::Executes), None);
    assert_eq!(single.median_ms, 2000);
    assert_eq!(single.requests_per_case, 5.0);
    assert_eq!(single.tokens_per_case, 220.0);
    assert_eq!(single.tool_calls_per_case, 2.0);
    assert_eq!(
        (s[1].graph.as_str(), s[1].cases, s[1].median_ms),
        ("multi", 1, 500)
    );
}

#[test]
fn the_markdown_table_has_one_line_per_graph() {
    let text = markdown(&summarize(&rows()));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[0].starts_with("| graph | cases | done | non-empty |"));
    assert_eq!(
        lines[2],
        "| single | 3 | 67% | 67% | 67% | 100% | 75% | 50% | 50% | – | 2.0 s | 5.0 | 220 | 2.0 |"
    );
    assert_eq!(
        lines[3],
        "| multi | 1 | 100% | 100% | 100% | 100% | 100% | 100% | – | – | 0.5 s | 1.0 | 0 | 0.0 |"
    );
}

#[test]
fn the_median_is_the_lower_middle_value() {
    assert_eq!(median(&mut []), 0);
    assert_eq!(median(&mut [5]), 5);
    assert_eq!(median(&mut [9, 1, 5]), 5);
    assert_eq!(median(&mut [4, 1, 3, 2]), 2);
}
