//! Two result files side by side: per metric and graph, per case, and whether the second
//! regresses on the metrics watched. Rates are taken over the (case, graph) pairs both files
//! hold, so a shorter run is compared on what it ran.

use crate::row::Row;
use crate::summary::{graphs, percent, seconds, Metric};
use std::fmt::Write;

/// The metrics `compare` watches unless told otherwise.
pub const DEFAULT_WATCHED: [Metric; 2] = [Metric::NonEmpty, Metric::StructureValid];

/// Rates below the first file's by more than this are regressions (rounding noise aside).
const EPSILON: f64 = 1e-9;

/// One metric of one graph in both files.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricDiff {
    /// The graph.
    pub graph: String,
    /// The metric.
    pub metric: Metric,
    /// The rate in the first file.
    pub a: Option<f64>,
    /// The rate in the second file.
    pub b: Option<f64>,
    /// Watched, and lower in the second file.
    pub regressed: bool,
}

/// One case whose metrics differ.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseDiff {
    /// The case.
    pub case: String,
    /// The graph.
    pub graph: String,
    /// The metrics that changed: metric, first, second.
    pub changes: Vec<(Metric, Option<f64>, Option<f64>)>,
    /// Wall times (ms) in both files.
    pub wall_ms: (u64, u64),
    /// Tokens in both files.
    pub tokens: (u64, u64),
    /// A watched metric went down.
    pub regressed: bool,
}

/// The comparison of two result files.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Per graph and metric.
    pub metrics: Vec<MetricDiff>,
    /// Cases whose metrics differ.
    pub cases: Vec<CaseDiff>,
    /// (case, graph) pairs only the first file holds.
    pub only_a: Vec<(String, String)>,
    /// (case, graph) pairs only the second file holds.
    pub only_b: Vec<(String, String)>,
    /// Common pairs.
    pub common: usize,
}

fn key(r: &Row) -> (String, String) {
    (r.case.clone(), r.graph.clone())
}

/// Compares `b` with `a`, flagging regressions on `watched`.
pub fn compare(a: &[Row], b: &[Row], watched: &[Metric]) -> Comparison {
    let find = |rows: &'_ [Row], k: &(String, String)| rows.iter().find(|r| key(r) == *k).cloned();
    let pairs: Vec<(Row, Row)> = a
        .iter()
        .filter_map(|ra| find(b, &key(ra)).map(|rb| (ra.clone(), rb)))
        .collect();
    let only = |x: &[Row], y: &[Row]| -> Vec<(String, String)> {
        x.iter().map(key).filter(|k| find(y, k).is_none()).collect()
    };
    let common_a: Vec<Row> = pairs.iter().map(|(ra, _)| ra.clone()).collect();
    let mut metrics = Vec::new();
    for graph in graphs(&common_a) {
        let side = |pick: fn(&(Row, Row)) -> &Row| -> Vec<&Row> {
            pairs
                .iter()
                .filter(|p| p.0.graph == graph)
                .map(pick)
                .collect()
        };
        let (rows_a, rows_b) = (side(|p| &p.0), side(|p| &p.1));
        for metric in Metric::ALL {
            let ra = metric.rate(rows_a.iter().copied());
            let rb = metric.rate(rows_b.iter().copied());
            metrics.push(MetricDiff {
                graph: graph.clone(),
                metric,
                a: ra,
                b: rb,
                regressed: watched.contains(&metric) && lower(ra, rb),
            });
        }
    }
    let cases = pairs
        .iter()
        .filter_map(|(ra, rb)| {
            let changes: Vec<(Metric, Option<f64>, Option<f64>)> = Metric::ALL
                .into_iter()
                .map(|m| (m, m.value(ra), m.value(rb)))
                .filter(|(_, x, y)| x != y)
                .collect();
            (!changes.is_empty()).then(|| CaseDiff {
                case: ra.case.clone(),
                graph: ra.graph.clone(),
                regressed: changes
                    .iter()
                    .any(|(m, x, y)| watched.contains(m) && lower(*x, *y)),
                changes,
                wall_ms: (ra.wall_ms, rb.wall_ms),
                tokens: (ra.tokens(), rb.tokens()),
            })
        })
        .collect();
    Comparison {
        metrics,
        cases,
        only_a: only(a, b),
        only_b: only(b, a),
        common: pairs.len(),
    }
}

fn lower(a: Option<f64>, b: Option<f64>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if b < a - EPSILON)
}

fn value(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.2}"))
}

impl Comparison {
    /// Whether the second file regresses on a watched metric (a rate of some graph).
    pub fn regressed(&self) -> bool {
        self.metrics.iter().any(|m| m.regressed)
    }

    /// The comparison as markdown: metrics per graph, then the cases that changed.
    pub fn markdown(&self) -> String {
        let mut out = format!("{} case(s) in both files\n\n", self.common);
        out.push_str("| graph | metric | A | B | change |\n| --- | --- | ---: | ---: | --- |\n");
        // A metric that applies to no case of either file (the instance checks of builder
        // runs, the workflow's of instance runs) is left out.
        for m in self
            .metrics
            .iter()
            .filter(|m| m.a.is_some() || m.b.is_some())
        {
            let change = match (m.a, m.b) {
                (Some(a), Some(b)) if (b - a).abs() > EPSILON => {
                    let mark = if m.regressed { " **regression**" } else { "" };
                    format!("{:+.0} pts{mark}", (b - a) * 100.0)
                }
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {change} |",
                m.graph,
                m.metric.name(),
                percent(m.a),
                percent(m.b)
            );
        }
        if !self.cases.is_empty() {
            out.push_str(
                "\n| case | graph | changes | time | tokens |\n| --- | --- | --- | --- | --- |\n",
            );
            for c in &self.cases {
                let changes: Vec<String> = c
                    .changes
                    .iter()
                    .map(|(m, a, b)| format!("{} {} → {}", m.name(), value(*a), value(*b)))
                    .collect();
                let mark = if c.regressed { " **regression**" } else { "" };
                let _ = writeln!(
                    out,
                    "| {} | {} | {}{mark} | {} → {} | {} → {} |",
                    c.case,
                    c.graph,
                    changes.join(", "),
                    seconds(c.wall_ms.0),
                    seconds(c.wall_ms.1),
                    c.tokens.0,
                    c.tokens.1
                );
            }
        }
        for (what, list) in [("only in A", &self.only_a), ("only in B", &self.only_b)] {
            if !list.is_empty() {
                let names: Vec<String> = list.iter().map(|(c, g)| format!("{c} ({g})")).collect();
                let _ = writeln!(out, "\n{what}: {}", names.join(", "));
            }
        }
        out
    }
}
