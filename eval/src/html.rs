//! A self-contained HTML page of a run: the summary table, then each case with its scores and
//! its workflow drawn as an inline SVG (nodes at their n8n positions, connections as lines;
//! `ai_*` connections dashed). No script, no external asset.

use crate::row::Row;
use crate::summary::{percent, seconds, shown_metrics, summarize};
use serde_json::Value;
use std::fmt::Write;

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}section{border-top:1px solid #ddd;margin-top:2em;padding-top:1em}\
.pass{color:#1a7f37}.fail{color:#cf222e}svg{background:#fafafa;border:1px solid #eee}\
ul{margin:.3em 0}code{font-size:90%}";

/// The page for `rows`, titled `title`.
pub fn page(title: &str, rows: &[Row]) -> String {
    let mut out = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n",
        t = escape(title)
    );
    if let Some(model) = rows.first().map(|r| r.model.as_str()) {
        let _ = writeln!(out, "<p>model: <code>{}</code></p>", escape(model));
    }
    out.push_str(&summary_table(rows));
    for row in rows {
        out.push_str(&case_section(row));
    }
    out.push_str("</body></html>\n");
    out
}

fn summary_table(rows: &[Row]) -> String {
    let summaries = summarize(rows);
    let shown = shown_metrics(&summaries);
    let mut out = String::from("<table><tr><th>graph</th><th>cases</th>");
    for m in shown.iter().copied() {
        let _ = write!(out, "<th>{}</th>", m.name());
    }
    out.push_str("<th>median time</th><th>requests/case</th><th>tokens/case</th></tr>\n");
    for s in summaries {
        let _ = write!(out, "<tr><td>{}</td><td>{}</td>", escape(&s.graph), s.cases);
        for m in shown.iter().copied() {
            let _ = write!(out, "<td>{}</td>", percent(s.rate(m)));
        }
        let _ = writeln!(
            out,
            "<td>{}</td><td>{:.1}</td><td>{:.0}</td></tr>",
            seconds(s.median_ms),
            s.requests_per_case,
            s.tokens_per_case
        );
    }
    out.push_str("</table>\n");
    out
}

fn mark(pass: bool) -> &'static str {
    if pass {
        "<span class=\"pass\">✓</span>"
    } else {
        "<span class=\"fail\">✗</span>"
    }
}

fn case_section(row: &Row) -> String {
    let s = &row.scores.workflow;
    let mut out = format!(
        "<section><h2>{} <small>({})</small></h2>\n<p>status <b>{}</b>, {}, {} model request(s), {} tokens, {} tool call(s)",
        escape(&row.case),
        escape(&row.graph),
        row.status.as_str(),
        seconds(row.wall_ms),
        row.model_requests,
        row.tokens(),
        row.tool_calls
    );
    if let Some(e) = &row.error {
        let _ = write!(out, "<br>error: <code>{}</code>", escape(e));
    }
    if let Some(checks) = &row.scores.instance {
        out.push_str("</p>\n");
        return out + &instance_section(row, checks);
    }
    let _ = write!(
        out,
        "</p>\n<p>{} non-empty ({} nodes) · {} structure · {} configuration",
        mark(s.non_empty),
        s.nodes,
        mark(s.structure.valid),
        mark(s.configuration.valid)
    );
    if let Some(n8n) = &row.scores.n8n {
        if let Some(a) = n8n.accepts {
            let _ = write!(out, " · {} n8n accepts", mark(a));
        }
        if let Some(x) = n8n.executes {
            let _ = write!(out, " · {} executes", mark(x));
        }
    }
    out.push_str("</p>\n");
    let findings: Vec<String> = s
        .structure
        .findings
        .iter()
        .chain(&s.configuration.findings)
        .map(|(code, n)| format!("{}×{n}", escape(code)))
        .collect();
    if !findings.is_empty() {
        let _ = writeln!(out, "<p>findings: <code>{}</code></p>", findings.join(" "));
    }
    if !s.checklist.items.is_empty() {
        out.push_str("<ul>");
        for item in &s.checklist.items {
            let _ = write!(out, "<li>{} {}</li>", mark(item.pass), escape(&item.item));
        }
        out.push_str("</ul>\n");
    }
    out.push_str(&svg(&row.workflow));
    out.push_str("</section>\n");
    out
}

/// An instance case's answer, the questions answered and its checks.
fn instance_section(row: &Row, checks: &crate::instance::InstanceScore) -> String {
    let mut out = String::new();
    if !checks.answered.is_empty() {
        let _ = writeln!(
            out,
            "<p>answered: {}</p>",
            escape(&checks.answered.join(", "))
        );
    }
    if let Some(e) = &checks.error {
        let _ = writeln!(out, "<p>n8n: <code>{}</code></p>", escape(e));
    }
    out.push_str("<ul>");
    for item in &checks.checks.items {
        let _ = write!(out, "<li>{} {}</li>", mark(item.pass), escape(&item.item));
    }
    out.push_str("</ul>\n");
    let _ = writeln!(out, "<pre>{}</pre>", escape(&row.answer));
    out.push_str("</section>\n");
    out
}

const NODE_W: f64 = 150.0;
const NODE_H: f64 = 40.0;
const SCALE: f64 = 0.8;
const PAD: f64 = 20.0;

/// The workflow drawn: each node a box at its position, each connection a line.
pub fn svg(workflow: &Value) -> String {
    let nodes = workflow["nodes"].as_array().cloned().unwrap_or_default();
    if nodes.is_empty() {
        return "<p><i>(empty workflow)</i></p>\n".into();
    }
    // Positions scaled; nodes without one are laid out on a row below.
    let raw: Vec<(f64, f64)> = nodes
        .iter()
        .enumerate()
        .map(
            |(i, n)| match (n["position"][0].as_f64(), n["position"][1].as_f64()) {
                (Some(x), Some(y)) => (x * SCALE, y * SCALE),
                _ => (i as f64 * (NODE_W + 30.0), 10_000.0),
            },
        )
        .collect();
    let min_x = raw.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let min_y = raw.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let pos: Vec<(f64, f64)> = raw
        .iter()
        .map(|(x, y)| (x - min_x + PAD, y - min_y + PAD))
        .collect();
    let width = pos.iter().map(|p| p.0).fold(0.0, f64::max) + NODE_W + PAD;
    let height = pos.iter().map(|p| p.1).fold(0.0, f64::max) + NODE_H + PAD;
    let index_of = |name: &str| nodes.iter().position(|n| n["name"] == name);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\">\n\
         <defs><marker id=\"a\" markerWidth=\"8\" markerHeight=\"8\" refX=\"8\" refY=\"4\" orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#888\"/></marker></defs>\n"
    );
    for (source, kinds) in workflow["connections"].as_object().into_iter().flatten() {
        let Some(si) = index_of(source) else { continue };
        for (kind, outputs) in kinds.as_object().into_iter().flatten() {
            let targets = outputs
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|o| o.as_array().into_iter().flatten());
            for target in targets {
                let Some(ti) = target["node"].as_str().and_then(index_of) else {
                    continue;
                };
                let ((sx, sy), (tx, ty)) = (pos[si], pos[ti]);
                if kind == "main" {
                    let _ = writeln!(
                        out,
                        "<line x1=\"{:.0}\" y1=\"{:.0}\" x2=\"{:.0}\" y2=\"{:.0}\" stroke=\"#888\" marker-end=\"url(#a)\"/>",
                        sx + NODE_W,
                        sy + NODE_H / 2.0,
                        tx,
                        ty + NODE_H / 2.0
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "<line x1=\"{:.0}\" y1=\"{:.0}\" x2=\"{:.0}\" y2=\"{:.0}\" stroke=\"#a371f7\" stroke-dasharray=\"4 3\"><title>{}</title></line>",
                        sx + NODE_W / 2.0,
                        sy,
                        tx + NODE_W / 2.0,
                        ty + NODE_H,
                        escape(kind)
                    );
                }
            }
        }
    }
    for (n, (x, y)) in nodes.iter().zip(&pos) {
        let name = n["name"].as_str().unwrap_or("?");
        let kind = n["type"].as_str().unwrap_or("?");
        let short: String = name.chars().take(22).collect();
        let _ = writeln!(
            out,
            "<g><title>{} ({})</title><rect x=\"{x:.0}\" y=\"{y:.0}\" width=\"{NODE_W}\" height=\"{NODE_H}\" rx=\"6\" fill=\"#fff\" stroke=\"#555\"/>\
             <text x=\"{:.0}\" y=\"{:.0}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\
             <text x=\"{:.0}\" y=\"{:.0}\" font-size=\"9\" fill=\"#777\" text-anchor=\"middle\">{}</text></g>",
            escape(name),
            escape(kind),
            x + NODE_W / 2.0,
            y + 17.0,
            escape(&short),
            x + NODE_W / 2.0,
            y + 31.0,
            escape(crate::cases::short_type(kind))
        );
    }
    out.push_str("</svg>\n");
    out
}
