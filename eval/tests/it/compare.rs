//! Comparing two fixed result sets.

use crate::fixtures::{row, RowSpec};
use agentgraph_eval::compare::{compare, DEFAULT_WATCHED};
use agentgraph_eval::summary::Metric;
use agentgraph_eval::Row;

fn a() -> Vec<Row> {
    vec![
        row(RowSpec {
            case: "c1",
            ..RowSpec::default()
        }),
        row(RowSpec {
            case: "c2",
            structure_valid: false,
            ..RowSpec::default()
        }),
        row(RowSpec {
            case: "gone",
            ..RowSpec::default()
        }),
    ]
}

fn b() -> Vec<Row> {
    vec![
        row(RowSpec {
            case: "c1",
            non_empty: false,
            structure_valid: false,
            checklist: (0, 1),
            wall_ms: 4000,
            ..RowSpec::default()
        }),
        row(RowSpec {
            case: "c2",
            structure_valid: false,
            ..RowSpec::default()
        }),
        row(RowSpec {
            case: "new",
            ..RowSpec::default()
        }),
    ]
}

#[test]
fn a_drop_on_a_watched_metric_is_a_regression() {
    let c = compare(&a(), &b(), &DEFAULT_WATCHED);
    assert!(c.regressed());
    assert_eq!(c.common, 2);
    let diff = |m: Metric| {
        c.metrics
            .iter()
            .find(|d| d.metric == m && d.graph == "single")
            .cloned()
            .expect("the metric is compared")
    };
    let non_empty = diff(Metric::NonEmpty);
    assert_eq!(
        (non_empty.a, non_empty.b, non_empty.regressed),
        (Some(1.0), Some(0.5), true)
    );
    let structure = diff(Metric::StructureValid);
    assert_eq!(
        (structure.a, structure.b, structure.regressed),
        (Some(0.5), Some(0.0), true)
    );
    // Dropped, but not watched.
    let checklist = diff(Metric::Checklist);
    assert_eq!(
        (checklist.a, checklist.b, checklist.regressed),
        (Some(1.0), Some(0.5), false)
    );
    assert_eq!(c.cases.len(), 1);
    let case = &c.cases[0];
    assert_eq!((case.case.as_str(), case.regressed), ("c1", true));
    assert_eq!(case.wall_ms, (1000, 4000));
    let changed: Vec<&str> = case.changes.iter().map(|(m, _, _)| m.name()).collect();
    assert_eq!(
        changed,
        [
            "non_empty",
            "structure_valid",
            "checklist",
            "checklist_pass"
        ]
    );
    assert_eq!(c.only_a, [("gone".to_string(), "single".to_string())]);
    assert_eq!(c.only_b, [("new".to_string(), "single".to_string())]);
    let text = c.markdown();
    assert!(
        text.contains("| single | non_empty | 100% | 50% | -50 pts **regression** |"),
        "{text}"
    );
    assert!(text.contains("only in A: gone (single)"), "{text}");
}

#[test]
fn an_improvement_or_an_unwatched_drop_is_no_regression() {
    assert!(!compare(&b(), &a(), &DEFAULT_WATCHED).regressed());
    assert!(!compare(&a(), &b(), &[Metric::Done]).regressed());
    assert!(!compare(&a(), &a(), &Metric::ALL).regressed());
}
