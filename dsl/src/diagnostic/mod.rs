//! Diagnostics as plain, serializable data, rendered by miette for people and as JSON for
//! editors and agents. [`codes`] lists every code; [`catalogue`] builds every diagnostic.

use crate::ast::Span;
use serde::Serialize;

pub mod catalogue;
pub mod codes;
mod render;
mod suggest;

pub use codes::Code;
pub use render::render;
pub use suggest::{did_you_mean, suggestion};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The graph will not compile.
    Error,
    /// Probably a mistake; the graph still compiles.
    Warning,
}

/// A secondary location with a note.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What about it.
    pub message: String,
}

/// One finding about a source file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    /// A stable code, e.g. `E0201` (see [`codes`] and docs/dsl-diagnostics.md).
    pub code: &'static str,
    /// Error or warning.
    pub severity: Severity,
    /// One sentence saying what is wrong.
    pub message: String,
    /// The file it is about (as given by the caller).
    pub file: String,
    /// The primary location.
    pub span: Span,
    /// What the primary location shows.
    pub label: String,
    /// Further locations.
    pub labels: Vec<Label>,
    /// How to fix it.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A finding of catalogue code `code` at `span` (its severity is the code's).
    pub fn new(code: Code, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            code: code.id,
            severity: code.severity,
            message: message.into(),
            file: String::new(),
            span,
            label: String::new(),
            labels: Vec::new(),
            help: None,
        }
    }

    /// Whether it has catalogue code `code`.
    pub fn is(&self, code: Code) -> bool {
        self.code == code.id
    }

    /// Sets the primary label.
    pub fn label(mut self, text: impl Into<String>) -> Self {
        self.label = text.into();
        self
    }

    /// Adds a secondary label.
    pub fn with_label(mut self, span: Span, text: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: text.into(),
        });
        self
    }

    /// Sets the help text.
    pub fn help(mut self, text: impl Into<String>) -> Self {
        self.help = Some(text.into());
        self
    }

    /// Sets the help text if there is one.
    pub fn maybe_help(mut self, text: Option<String>) -> Self {
        if text.is_some() {
            self.help = text;
        }
        self
    }

    /// Whether it is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.chars().count(), |i| before[i + 1..].chars().count())
        + 1;
    (line, col)
}

/// The JSON form for editors: the diagnostic plus line/column of each span.
pub fn to_json(d: &Diagnostic, src: &str) -> serde_json::Value {
    let pos = |s: Span| {
        let (line, column) = line_col(src, s.start);
        let (end_line, end_column) = line_col(src, s.end);
        serde_json::json!({"start": s.start, "end": s.end, "line": line, "column": column,
            "end_line": end_line, "end_column": end_column})
    };
    serde_json::json!({
        "code": d.code,
        "severity": d.severity,
        "message": d.message,
        "file": d.file,
        "span": pos(d.span),
        "label": d.label,
        "labels": d.labels.iter().map(|l| serde_json::json!({"span": pos(l.span), "message": l.message})).collect::<Vec<_>>(),
        "help": d.help,
    })
}
