//! The per-graph summary of a set of rows, and the metrics `compare` checks.

use crate::row::Row;
use crate::run::Status;
use serde::Serialize;
use std::fmt::Write;

/// A per-case measure whose mean over cases is a rate (0 to 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The run ended normally.
    Done,
    /// The workflow has a node.
    NonEmpty,
    /// `validate_structure` finds no error.
    StructureValid,
    /// `validate_configuration` finds no error.
    ConfigurationValid,
    /// The checklist score (items met over items).
    Checklist,
    /// Every checklist item is met.
    ChecklistPass,
    /// n8n created the workflow.
    N8nAccepts,
    /// n8n executed it with the expected output.
    Executes,
    /// An instance case's checks met over checks (answer, tools, the instance after).
    Checks,
    /// Every check of an instance case is met.
    ChecksPass,
}

impl Metric {
    /// Every metric, in table order.
    pub const ALL: [Metric; 10] = [
        Metric::Done,
        Metric::NonEmpty,
        Metric::StructureValid,
        Metric::ConfigurationValid,
        Metric::Checklist,
        Metric::ChecklistPass,
        Metric::N8nAccepts,
        Metric::Executes,
        Metric::Checks,
        Metric::ChecksPass,
    ];

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Done => "done",
            Metric::NonEmpty => "non_empty",
            Metric::StructureValid => "structure_valid",
            Metric::ConfigurationValid => "configuration_valid",
            Metric::Checklist => "checklist",
            Metric::ChecklistPass => "checklist_pass",
            Metric::N8nAccepts => "n8n_accepts",
            Metric::Executes => "executes",
            Metric::Checks => "checks",
            Metric::ChecksPass => "checks_pass",
        }
    }

    /// The metric called `name`.
    pub fn parse(name: &str) -> Result<Metric, String> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == name.trim())
            .ok_or_else(|| {
                let known: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
                format!("no metric `{name}`; the metrics: {}", known.join(", "))
            })
    }

    /// The case's value (`None` when the metric does not apply to it: no checklist, no n8n,
    /// not an offline case; the workflow's metrics for an instance case, the instance's for a
    /// builder case).
    pub fn value(self, row: &Row) -> Option<f64> {
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let s = &row.scores;
        let instance = s.instance.as_ref();
        match self {
            Metric::Done => Some(flag(row.status == Status::Done)),
            Metric::Checks => instance.and_then(|i| i.checks.score),
            Metric::ChecksPass => instance
                .filter(|i| i.checks.total > 0)
                .map(|i| flag(i.all_pass())),
            _ if instance.is_some() => None,
            Metric::NonEmpty => Some(flag(s.workflow.non_empty)),
            Metric::StructureValid => Some(flag(s.workflow.structure.valid)),
            Metric::ConfigurationValid => Some(flag(s.workflow.configuration.valid)),
            Metric::Checklist => s.workflow.checklist.score,
            Metric::ChecklistPass => {
                (s.workflow.checklist.total > 0).then(|| flag(s.workflow.checklist.all_pass()))
            }
            Metric::N8nAccepts => s.n8n.as_ref().and_then(|n| n.accepts).map(flag),
            Metric::Executes => s.n8n.as_ref().and_then(|n| n.executes).map(flag),
        }
    }

    /// The mean of the cases' values (`None` when it applies to none).
    pub fn rate<'a>(self, rows: impl IntoIterator<Item = &'a Row>) -> Option<f64> {
        let values: Vec<f64> = rows.into_iter().filter_map(|r| self.value(r)).collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// One graph's line of the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphSummary {
    /// The graph.
    pub graph: String,
    /// Cases run.
    pub cases: usize,
    /// Of them, instance cases (checked by answer and instance, not by workflow).
    pub instance_cases: usize,
    /// The rate of each metric, in [`Metric::ALL`] order.
    pub rates: Vec<(Metric, Option<f64>)>,
    /// The median wall time, in milliseconds.
    pub median_ms: u64,
    /// Model requests per case.
    pub requests_per_case: f64,
    /// Tokens (prompt and completion) per case.
    pub tokens_per_case: f64,
    /// Tool calls per case.
    pub tool_calls_per_case: f64,
}

impl GraphSummary {
    /// The rate of `metric`.
    pub fn rate(&self, metric: Metric) -> Option<f64> {
        self.rates
            .iter()
            .find(|(m, _)| *m == metric)
            .and_then(|(_, r)| *r)
    }
}

/// The graphs of `rows`, in the order they first appear.
pub fn graphs(rows: &[Row]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows {
        if !out.contains(&r.graph) {
            out.push(r.graph.clone());
        }
    }
    out
}

/// One summary per graph.
pub fn summarize(rows: &[Row]) -> Vec<GraphSummary> {
    graphs(rows)
        .into_iter()
        .map(|graph| {
            let mine: Vec<&Row> = rows.iter().filter(|r| r.graph == graph).collect();
            let n = mine.len().max(1) as f64;
            let mut times: Vec<u64> = mine.iter().map(|r| r.wall_ms).collect();
            GraphSummary {
                cases: mine.len(),
                instance_cases: mine.iter().filter(|r| r.scores.instance.is_some()).count(),
                rates: Metric::ALL
                    .into_iter()
                    .map(|m| (m, m.rate(mine.iter().copied())))
                    .collect(),
                median_ms: median(&mut times),
                requests_per_case: mine.iter().map(|r| r.model_requests as f64).sum::<f64>() / n,
                tokens_per_case: mine.iter().map(|r| r.tokens() as f64).sum::<f64>() / n,
                tool_calls_per_case: mine.iter().map(|r| r.tool_calls as f64).sum::<f64>() / n,
                graph,
            }
        })
        .collect()
}

/// The median (the lower middle one for an even count; 0 for none).
pub fn median(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    match values.len() {
        0 => 0,
        n => values[(n - 1) / 2],
    }
}

/// A rate as a whole percentage, `–` when there is none.
pub fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "–".to_string(), |r| format!("{:.0}%", r * 100.0))
}

/// Milliseconds as seconds with one decimal.
pub fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// The header of each metric's column.
fn header(m: Metric) -> &'static str {
    match m {
        Metric::Done => "done",
        Metric::NonEmpty => "non-empty",
        Metric::StructureValid => "structure valid",
        Metric::ConfigurationValid => "configuration valid",
        Metric::Checklist => "checklist",
        Metric::ChecklistPass => "checklist pass",
        Metric::N8nAccepts => "n8n accepts",
        Metric::Executes => "executes",
        Metric::Checks => "checks",
        Metric::ChecksPass => "checks pass",
    }
}

impl Metric {
    /// Whether the metric is about an instance case (else about a workflow; `done` is both).
    pub fn is_instance(self) -> bool {
        matches!(self, Metric::Checks | Metric::ChecksPass)
    }
}

/// The metrics a table of `summaries` shows: `done`, the workflow's when some case is a
/// builder case, the instance's when some case is an instance case.
pub fn shown_metrics(summaries: &[GraphSummary]) -> Vec<Metric> {
    let builder = summaries.iter().any(|s| s.cases > s.instance_cases);
    let instance = summaries.iter().any(|s| s.instance_cases > 0);
    Metric::ALL
        .into_iter()
        .filter(|m| *m == Metric::Done || if m.is_instance() { instance } else { builder })
        .collect()
}

/// The summary as a markdown table: a column per metric [`shown_metrics`] gives, then time,
/// requests, tokens and tool calls.
pub fn markdown(summaries: &[GraphSummary]) -> String {
    let shown = shown_metrics(summaries);
    let mut out = String::from("| graph | cases |");
    for m in &shown {
        let _ = write!(out, " {} |", header(*m));
    }
    out.push_str(" median time | requests/case | tokens/case | tool calls/case |\n| --- | ---: |");
    out.push_str(&" ---: |".repeat(shown.len() + 4));
    out.push('\n');
    for s in summaries {
        let _ = write!(out, "| {} | {} |", s.graph, s.cases);
        for m in &shown {
            let _ = write!(out, " {} |", percent(s.rate(*m)));
        }
        let _ = writeln!(
            out,
            " {} | {:.1} | {:.0} | {:.1} |",
            seconds(s.median_ms),
            s.requests_per_case,
            s.tokens_per_case,
            s.tool_calls_per_case
        );
    }
    out
}

impl GraphSummary {
    /// The summary as JSON: `{graph, cases, rates: {metric: rate}, median_ms, …}`.
    pub fn to_json(&self) -> serde_json::Value {
        let rates: serde_json::Map<String, serde_json::Value> = self
            .rates
            .iter()
            .map(|(m, r)| (m.name().to_string(), serde_json::json!(r)))
            .collect();
        serde_json::json!({
            "graph": self.graph,
            "cases": self.cases,
            "rates": rates,
            "median_ms": self.median_ms,
            "requests_per_case": self.requests_per_case,
            "tokens_per_case": self.tokens_per_case,
            "tool_calls_per_case": self.tool_calls_per_case,
        })
    }
}
