//! The result of a validation run and its renderings.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{Finding, Severity};

/// The findings of a validation run, in rule order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Every finding.
    pub findings: Vec<Finding>,
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

impl Report {
    /// A report over these findings.
    pub fn new(findings: Vec<Finding>) -> Self {
        Report { findings }
    }

    /// Whether there is no finding at all.
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    /// Number of findings of this severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }

    /// Number of error findings.
    pub fn errors(&self) -> usize {
        self.count(Severity::Error)
    }

    /// Number of warning findings.
    pub fn warnings(&self) -> usize {
        self.count(Severity::Warning)
    }

    /// Whether some finding is an error.
    pub fn has_errors(&self) -> bool {
        self.errors() > 0
    }

    /// Findings per code.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for f in &self.findings {
            *out.entry(f.code).or_insert(0) += 1;
        }
        out
    }

    /// The findings of one code.
    pub fn with_code<'a>(&'a self, code: &'a str) -> impl Iterator<Item = &'a Finding> + 'a {
        self.findings.iter().filter(move |f| f.code == code)
    }

    /// One line per finding (`node "X" [CODE] severity: message (at parameters.path)`), then
    /// a summary line ([`Report::summary`]), each prefixed with `prefix` (e.g. the file name
    /// and `: `).
    pub fn render_text(&self, prefix: &str) -> String {
        let mut out = String::new();
        for f in &self.findings {
            out.push_str(prefix);
            if let Some(node) = &f.node {
                out.push_str(&format!("node \"{node}\" "));
            }
            out.push_str(&format!("[{}] {}: {}", f.code, f.severity, f.message));
            if let Some(path) = &f.path {
                out.push_str(&format!(" (at parameters.{path})"));
            }
            out.push('\n');
        }
        out.push_str(prefix);
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    /// `3 errors, 1 warning, 0 infos` or `no problems found`.
    pub fn summary(&self) -> String {
        if self.findings.is_empty() {
            return "no problems found".to_string();
        }
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        format!(
            "{}, {}, {}",
            plural(self.errors(), "error"),
            plural(self.warnings(), "warning"),
            plural(self.count(Severity::Info), "info")
        )
    }

    /// The XML-ish block the validation tools return: `<validation_result scope="…"
    /// status="valid|invalid" errors="N" warnings="N">` with one `<finding>` per finding.
    pub fn render_block(&self, scope: &str) -> String {
        if self.findings.is_empty() {
            return format!(
                "<validation_result scope=\"{}\" status=\"valid\" errors=\"0\" warnings=\"0\">\nThe workflow {} is valid: no problems found.\n</validation_result>",
                escape(scope),
                escape(scope)
            );
        }
        let status = if self.has_errors() {
            "invalid"
        } else {
            "valid"
        };
        let mut out = format!(
            "<validation_result scope=\"{}\" status=\"{status}\" errors=\"{}\" warnings=\"{}\">\n",
            escape(scope),
            self.errors(),
            self.warnings()
        );
        for f in &self.findings {
            out.push_str(&format!(
                "<finding code=\"{}\" severity=\"{}\"",
                f.code, f.severity
            ));
            if let Some(node) = &f.node {
                out.push_str(&format!(" node=\"{}\"", escape(node)));
            }
            if let Some(path) = &f.path {
                out.push_str(&format!(" path=\"{}\"", escape(path)));
            }
            out.push_str(&format!(">{}</finding>\n", escape(&f.message)));
        }
        if self.has_errors() {
            out.push_str("Fix the errors above, then validate again.\n");
        }
        out.push_str("</validation_result>");
        out
    }

    /// The report as JSON: `{valid, errors, warnings, infos, counts, findings}`.
    pub fn to_json(&self) -> Value {
        json!({
            "valid": !self.has_errors(),
            "errors": self.errors(),
            "warnings": self.warnings(),
            "infos": self.count(Severity::Info),
            "counts": self.counts(),
            "findings": self.findings,
        })
    }
}
