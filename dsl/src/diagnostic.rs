//! Diagnostics as plain, serializable data, rendered by miette for people and as JSON for
//! editors and agents.

use crate::ast::Span;
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan};
use serde::Serialize;
use std::fmt;

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
    /// A stable code, e.g. `E0201` (see docs/dsl.md for the list).
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
    /// An error at `span`.
    pub fn error(code: &'static str, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            file: String::new(),
            span,
            label: String::new(),
            labels: Vec::new(),
            help: None,
        }
    }

    /// A warning at `span`.
    pub fn warning(code: &'static str, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, span, message)
        }
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

struct Report<'a> {
    d: &'a Diagnostic,
    src: NamedSource<String>,
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.d.message)
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.d.message)
    }
}

impl std::error::Error for Report<'_> {}

fn source_span(s: Span) -> SourceSpan {
    SourceSpan::new(s.start.into(), s.end.saturating_sub(s.start))
}

impl miette::Diagnostic for Report<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(self.d.code))
    }
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.d.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }
    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.d
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.src)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let primary = LabeledSpan::new_primary_with_span(
            (!self.d.label.is_empty()).then(|| self.d.label.clone()),
            source_span(self.d.span),
        );
        let rest = self
            .d
            .labels
            .iter()
            .map(|l| LabeledSpan::new_with_span(Some(l.message.clone()), source_span(l.span)));
        Some(Box::new(std::iter::once(primary).chain(rest)))
    }
}

/// Renders a diagnostic like rustc, with the source excerpt. `color` adds ANSI colours; `width`
/// wraps the text.
pub fn render(d: &Diagnostic, src: &str, color: bool, width: usize) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(width)
        .with_links(false);
    let report = Report {
        d,
        src: NamedSource::new(d.file.clone(), src.to_string()),
    };
    let mut out = String::new();
    if handler.render_report(&mut out, &report).is_err() {
        let (line, col) = line_col(src, d.span.start);
        out = format!(
            "{}[{}]: {} at {}:{}:{}\n",
            severity_word(d.severity),
            d.code,
            d.message,
            d.file,
            line,
            col
        );
    }
    out
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// The closest of `candidates` to `name`, if close enough to suggest.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (c, strsim::jaro_winkler(name, c)))
        .filter(|(c, score)| *score > 0.8 || (c.len() > 3 && strsim::levenshtein(name, c) <= 2))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

/// `did you mean `x`?` or a list of what exists.
pub fn suggestion<'a>(
    what: &str,
    name: &str,
    candidates: impl IntoIterator<Item = &'a str> + Clone,
) -> String {
    match did_you_mean(name, candidates.clone()) {
        Some(s) => format!("did you mean `{s}`?"),
        None => {
            let all: Vec<&str> = candidates.into_iter().collect();
            if all.is_empty() {
                format!("there are no {what} to choose from")
            } else {
                format!("defined {what}: {}", all.join(", "))
            }
        }
    }
}
